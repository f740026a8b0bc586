/**
 * What the browser may take from the pure engine: the failure catalogue, the run statuses,
 * how a person reads a proof's checks, and `assertNever`. Re-exported rather than moved so the
 * engine stays importable on its own (it imports nothing outside server/engine).
 */
export { describeFailure, FAILURE_CATALOGUE, FAILURE_CODES, failureEntry, failureFields, isFailureCode, OUTCOME_CLASSES, OWNERS } from "../engine/catalogue";
export type { FailureCode, FailureDescription, OutcomeClass, Owner } from "../engine/catalogue";
export { EXECUTING_RUN_STATUSES, isLiveRunStatus, LIVE_RUN_STATUSES } from "../engine/run-status";
export type { LiveRunStatus } from "../engine/run-status";
export { isJudgement, JUDGEMENT_KINDS, readChecks } from "../engine/readings";
export type { CheckReading } from "../engine/readings";
export { assertNever } from "../engine/checks";
export { STUCK_REASONS } from "../engine/stuck";
export type { StuckReason } from "../engine/stuck";
