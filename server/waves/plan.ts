/**
 * A restart-chaos wave's plan (docs/rules.md §5), derived from its seed alone: the same seed
 * and options give the same tasks, faults and kill schedule.
 */

import type { FaultName, KillKind } from "../shared/wave-report";

export interface WaveOptions {
  seed: number;
  tasks: number;
  kills: KillKind[];
  faults: FaultName[];
  concurrency: number;
}

export interface PlannedTask {
  key: string;
  agent: string;
  provider: "codex" | "claude";
  target: "remote" | "local";
  sandboxMode: "per_turn" | "warm";
  turns: number;
  /** Faults injected into this task's first run. */
  faults: FaultName[];
}

export interface PlannedKill {
  kind: KillKind;
  /**
   * Milliseconds after the controller it targets is ready (the first kill: the first
   * controller; each later one: the controller the previous kill's restart brought up).
   * The kill then also waits until that controller has work in flight to interrupt.
   */
  atMs: number;
  /** K4's crash point: between an intent's commit and its lease's, or in a teardown claim. */
  crashAt?: "after_create" | "during_teardown_claim";
}

export interface WavePlan {
  seed: number;
  tasks: PlannedTask[];
  kills: PlannedKill[];
  concurrency: number;
}

/** mulberry32: small, fast, and the same on every machine. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function planWave(options: WaveOptions): WavePlan {
  const random = prng(options.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const tasks: PlannedTask[] = Array.from({ length: options.tasks }, (_, i) => {
    const provider = pick(["codex", "claude"] as const);
    return {
      key: `t${String(i + 1).padStart(2, "0")}`,
      agent: provider === "codex" ? pick(["codex-c1", "codex-planner"]) : pick(["claude-acpx", "claude-main"]),
      provider,
      target: random() < 0.85 ? "remote" : "local",
      sandboxMode: random() < 0.5 ? "per_turn" : "warm",
      turns: 2 + Math.floor(random() * 3),
      faults: [],
    };
  });
  // Each fault lands on one task, spread so that no task carries two while others carry none.
  const order = shuffle(tasks.map((_, i) => i), random);
  options.faults.forEach((fault, i) => {
    const task = tasks[order[i % Math.max(1, order.length)]!];
    if (task && !task.faults.includes(fault)) task.faults.push(fault);
  });
  // Kills in seeded order, each a short seeded delay after its target controller is ready.
  const kills: PlannedKill[] = shuffle([...options.kills], random).map((kind) => ({
    kind,
    atMs: Math.round(600 + random() * 1400),
    ...(kind === "K4" ? { crashAt: random() < 0.5 ? ("after_create" as const) : ("during_teardown_claim" as const) } : {}),
  }));
  return { seed: options.seed, tasks, kills, concurrency: options.concurrency };
}

/**
 * The tasks a wave holds back at its start (docs/rules.md §5): a kill lands only on work in
 * flight on the controller it targets, so a wave keeps one task in reserve for each kill after
 * the first (the first lands on the tasks submitted at the start) and one more for a K4, whose
 * armed controller must still create or tear down a sandbox after it fires. Each is released
 * when a kill is due, or a K4 armed, and its target has no work (`server/waves/step.ts`); all
 * are released once every kill has fired. Taken from the end of the plan, never the task an
 * `archive` lands on (it lands with the first kill), and never every task.
 */
export function tasksHeldBack(plan: Pick<WavePlan, "tasks" | "kills">): string[] {
  const wanted = Math.max(0, plan.kills.length - 1) + (plan.kills.some((k) => k.kind === "K4") ? 1 : 0);
  const holdable = plan.tasks.filter((t) => !t.faults.includes("archive")).map((t) => t.key);
  const count = Math.min(wanted, holdable.length, plan.tasks.length - 1);
  return count > 0 ? holdable.slice(-count) : [];
}

function shuffle<T>(xs: T[], random: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

export function waveId(startedAt: Date, seed: number): string {
  const stamp = startedAt.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "");
  return `w-${stamp}-s${seed}`;
}
