/**
 * Did an agent turn succeed? (issue 11) Pure: the runner's own record of the turn decides.
 * A turn the runner processed with a non-zero exit ends the run with `agent_command_failed`
 * (owner agent, Retry); the checks say what was compared.
 */

export interface TurnRecord {
  seq: number;
  exitCode: number | null | undefined;
}

export interface TurnJudgement {
  verdict: "turn_succeeded" | "turn_failed";
  code: "agent_command_failed" | null;
  checks: Array<{ name: string; expected: unknown; actual: unknown; ok: boolean }>;
}

export function judgeTurn(expectedSeq: number, record: TurnRecord): TurnJudgement {
  const checks = [
    { name: "runner_record_is_this_turn", expected: expectedSeq, actual: record.seq, ok: record.seq === expectedSeq },
    { name: "agent_command_exit_code", expected: 0, actual: record.exitCode ?? null, ok: record.exitCode === 0 },
  ];
  const ok = checks.every((c) => c.ok);
  return { verdict: ok ? "turn_succeeded" : "turn_failed", code: ok ? null : "agent_command_failed", checks };
}
