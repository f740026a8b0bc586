import { AppError } from "../errors";

const DURATION = /^(\d+(?:\.\d+)?)(ms|s)?$/;

/**
 * `run submit --turn-sleep`: the demo agent's sleep before each turn's work, as `3s`, `2.5s`,
 * `500ms` or a bare number of seconds (as `--turn-timeout` takes seconds), from 0 up to `maxMs`
 * (`DEMO_SLEEP_MAX_MS` in server/runs/submit.ts, whose schema checks it again for runs.create).
 * Returns whole milliseconds; anything else is refused as bad input naming the option (the CLI
 * audits it and exits 2).
 */
export function parseTurnSleep(text: string, maxMs: number): number {
  const match = DURATION.exec(text.trim());
  const ms = match ? Number(match[1]) * (match[2] === "ms" ? 1 : 1000) : Number.NaN;
  if (!Number.isInteger(ms) || ms > maxMs) {
    throw new AppError("INVALID_INPUT", `--turn-sleep takes a duration from 0 to ${maxMs / 1000}s, such as 3s or 500ms, not ${JSON.stringify(text)}`);
  }
  return ms;
}
