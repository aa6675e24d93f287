export type CheckResult = 'ok' | 'failed';

/** Rejects when the promise has not settled within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs readiness checks in parallel, each bounded so a hung dependency cannot hang the probe. */
export async function probe(
  checks: Record<string, () => Promise<unknown>>,
  timeoutMs = 2000,
): Promise<{ ok: boolean; checks: Record<string, CheckResult> }> {
  const names = Object.keys(checks);
  const settled = await Promise.allSettled(names.map((name) => within(checks[name]!(), timeoutMs)));
  const results = Object.fromEntries(
    names.map((name, i) => [name, settled[i]!.status === 'fulfilled' ? 'ok' : 'failed'] as const),
  );
  return { ok: Object.values(results).every((r) => r === 'ok'), checks: results };
}
