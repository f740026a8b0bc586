import { killAt, type WaveAction, type WaveState } from "./step-state";

/**
 * A kill that fired and did not land where planned — a K2 whose drain did not suspend the run
 * it caught (the run ended instead), a K5 with no run left in session on its stalled target, or
 * taken over otherwise than by silence — is fired again on the next work in flight (docs/rules.md
 * §5: a wave keeps work in flight until every planned kill has landed). At most
 * `MAX_FIRES_AGAIN` times, and only while no later kill has fired, so the plan's order holds;
 * the held-back tasks stay held for it (the kill is pending again). Its record keeps what went
 * wrong before, and is judged on the last firing.
 */
export const MAX_FIRES_AGAIN = 2;

export function fireAgain(state: WaveState, index: number, actions: WaveAction[]): void {
  const kill = killAt(state, index);
  const again = state.refired[index] ?? 0;
  if (kill.landed || again >= MAX_FIRES_AGAIN || state.next !== index + 1) return;
  state.refired[index] = again + 1;
  state.next = index;
  actions.push({ type: "note", kind: "kill", detail: `${kill.kind} is fired again on the next work in flight (${again + 1} of ${MAX_FIRES_AGAIN}): ${kill.detail}` });
  kill.detail = `fired again after: ${kill.detail}`;
  kill.firedAtMs = null;
}
