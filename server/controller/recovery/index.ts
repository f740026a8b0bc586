/**
 * Recovery (docs/rules.md §2.1, §2.2, §2.8, §2.10), one file per part: which runs are taken
 * over (`claim.ts`), how one goes on (`recover.ts`: the engine's walk asked and answered,
 * `readings.ts` the answers, `land.ts` the outcome), and a failed attempt counted (`attempt.ts`).
 */
export { claimInterruptedRuns, claimUntrackedRuns, executingRunsPage, executorStatus, type ExecutorStatus } from "./claim";
export { countFailedAttempt } from "./attempt";
export { recoverRun } from "./recover";
export { FAILOVER_BACKUP_PATH, lastProcessedSeq, MAX_SANDBOX_START_ATTEMPTS, ROTATION_SNAPSHOT_PATH, runnerReading, sandboxStartAttempts, walkLease, walkRun } from "./readings";
