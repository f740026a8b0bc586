/** Timing helpers for the scale benchmark: ours against the raw-SQL floor, in the same run. */

export interface Figure {
  name: string;
  size: number;
  oursMinMs: number;
  oursMedianMs: number;
  oursP95Ms: number;
  rawMinMs: number;
  rawMedianMs: number;
  rawP95Ms: number;
  ratioP95: number;
  /** A figure with a unit of its own (throughput, seconds, KB) instead of a ratio. */
  value?: number;
  unit?: string;
  note?: string;
}

/** A figure with a unit of its own (no ratio to raw SQL). */
export function unitFigure(name: string, size: number, value: number, unit: string, note: string): Figure {
  return { name, size, oursMinMs: NaN, oursMedianMs: NaN, oursP95Ms: NaN, rawMinMs: NaN, rawMedianMs: NaN, rawP95Ms: NaN, ratioP95: NaN, value, unit, note };
}

export function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

/**
 * Runs ours and raw alternately (so drift in the machine's load hits both alike), after a
 * warm-up, and reports min / median / p95 of each and the ratio of the p95s.
 */
export async function compare(
  name: string,
  size: number,
  ours: () => Promise<unknown>,
  raw: () => Promise<unknown>,
  options: { reps?: number; warmup?: number; note?: string } = {},
): Promise<Figure> {
  const reps = options.reps ?? 30;
  for (let i = 0; i < (options.warmup ?? 3); i++) {
    await ours();
    await raw();
  }
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < reps; i++) {
    a.push(await time(ours));
    b.push(await time(raw));
  }
  a.sort((x, y) => x - y);
  b.sort((x, y) => x - y);
  const f: Figure = {
    name,
    size,
    oursMinMs: a[0]!,
    oursMedianMs: quantile(a, 0.5),
    oursP95Ms: quantile(a, 0.95),
    rawMinMs: b[0]!,
    rawMedianMs: quantile(b, 0.5),
    rawP95Ms: quantile(b, 0.95),
    ratioP95: quantile(a, 0.95) / Math.max(quantile(b, 0.95), 0.001),
    ...(options.note ? { note: options.note } : {}),
  };
  return f;
}

export function formatFigure(f: Figure): string {
  if (f.unit) {
    return `  ${f.name.padEnd(44)} ${String(f.size).padStart(9)}  ${String(Number(f.value?.toFixed(2))).padStart(10)} ${f.unit}${f.note ? `  (${f.note})` : ""}`;
  }
  const ms = (x: number) => x.toFixed(x < 10 ? 2 : 1).padStart(8);
  return `  ${f.name.padEnd(44)} ${String(f.size).padStart(9)}  ours ${ms(f.oursMinMs)} ${ms(f.oursMedianMs)} ${ms(f.oursP95Ms)}  raw ${ms(f.rawMinMs)} ${ms(f.rawMedianMs)} ${ms(f.rawP95Ms)}  ×${f.ratioP95.toFixed(2)}${f.note ? `  (${f.note})` : ""}`;
}

export const FIGURE_HEADER = `  ${"figure".padEnd(44)} ${"runs".padStart(9)}  ours ${"min".padStart(8)} ${"median".padStart(8)} ${"p95".padStart(8)}  raw ${"min".padStart(8)} ${"median".padStart(8)} ${"p95".padStart(8)}  p95 ratio (ms)`;
