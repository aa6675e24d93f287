/** One line of the benchmark table: a figure, its reference measured in the same run, and their ratio. */
export interface Figure {
  figure: string;
  value: number;
  unit: string;
  /** What the value is measured against in the same run; null for a count that has no physical reference. */
  reference: string | null;
  referenceValue: number | null;
  /** value / referenceValue (higher is better for throughputs, lower for latencies and costs); null without one. */
  ratio: number | null;
  /** What this run adds (how far a sweep got, how much of a recovery a window saw); not part of the name. */
  note?: string;
}

/** Operations per second of `fn`, after a warm-up, over about `seconds`. */
export function opsPerSecond(fn: () => unknown, seconds: number): number {
  for (let i = 0; i < 5_000; i += 1) fn();
  const batch = 500;
  let ops = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < batch; i += 1) fn();
    ops += batch;
  }
  return Math.round((ops / (performance.now() - started)) * 1000);
}

/**
 * Calls `fn` with `inFlight` calls at a time, each starting once the one before it ended, until `until` (a
 * performance.now()); resolves to the calls made.
 */
export async function callsUntil(fn: () => Promise<unknown>, until: number, inFlight: number): Promise<number> {
  let calls = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < until) {
        await fn();
        calls += 1;
      }
    }),
  );
  return calls;
}

/** A throughput figure against its reference, measured back to back. */
export function throughput(
  figure: string,
  unit: string,
  fn: () => unknown,
  reference: string,
  referenceFn: () => unknown,
  seconds: number,
): Figure {
  const referenceValue = opsPerSecond(referenceFn, seconds);
  const value = opsPerSecond(fn, seconds);
  return { figure, value, unit, reference, referenceValue, ratio: Number((value / referenceValue).toFixed(4)) };
}

/** The p-th percentile of ascending `sorted` (nearest rank, the lower one). */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
