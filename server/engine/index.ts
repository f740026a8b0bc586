/** The recovery engine's public API: pure proofs over evidence bundles (EVIDENCE.md). */
export * from "./schemas";
export * from "./verdicts";
export * from "./catalogue";
export { EvidenceError } from "./errors";
export { decide, safeDecide, parseEvidence, evaluate, DEFAULT_ENGINE_CONFIG } from "./decide";
export type { EngineConfig, ParseResult, DecideResult } from "./decide";
export { evaluateLeaseBinding } from "./lease-binding";
export { evaluateBootstrapRestart, connectionTraces } from "./bootstrap-restart";
export { classifyStartupFailure, STARTUP_RETRY_AFTER_SECONDS } from "./startup-failure";
export type { StartupFailureConfig } from "./startup-failure";
export { judgeProcessExit, judgeRecordedProcess, START_TIME_TOLERANCE_MS } from "./process-exit";
export { decideCreationIntent } from "./creation-intent";
export { decideTeardownFence } from "./teardown-fence";
export { explainVerdict } from "./explain";
export { judgeTurn } from "./turn-result";
export type { TurnJudgement, TurnRecord } from "./turn-result";
