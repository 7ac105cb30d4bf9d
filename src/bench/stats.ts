/** Summary of one figure over the runs of a scenario. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

/** Nearest-rank percentile of `values` (0 ≤ p ≤ 100); NaN for an empty list. */
export function percentile(values: ArrayLike<number>, p: number): number {
  const sorted = Float64Array.from(values).filter((v) => !Number.isNaN(v)).sort();
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export function median(values: ArrayLike<number>): number {
  const sorted = Float64Array.from(values).filter((v) => !Number.isNaN(v)).sort();
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const mid = n >> 1;
  return n % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export function spread(values: readonly number[]): Spread {
  const clean = values.filter((v) => !Number.isNaN(v));
  if (clean.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  return { median: median(clean), min: Math.min(...clean), max: Math.max(...clean) };
}

/** Spread of every numeric field across runs: `{field: {median, min, max}}`. */
export function summarize<T extends { [K in keyof T]: number }>(runs: readonly T[]): { [K in keyof T]: Spread } {
  const out: Partial<Record<keyof T, Spread>> = {};
  const first = runs[0];
  if (first) for (const key of Object.keys(first) as (keyof T)[]) out[key] = spread(runs.map((r) => r[key]));
  return out as { [K in keyof T]: Spread };
}

export function maxOf(values: ArrayLike<number>): number {
  let m = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] ?? Number.NaN;
    if (v > m) m = v;
  }
  return m === Number.NEGATIVE_INFINITY ? Number.NaN : m;
}
