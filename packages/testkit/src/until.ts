/** How long to wait, how often to look, and what the error names when the time is up. */
export interface WaitOptions {
  /** Default 15 s. */
  timeoutMs?: number;
  /** Default 50 ms. */
  everyMs?: number;
  /** Named in the error; default "condition". */
  what?: string;
}

/**
 * Calls `probe` until it returns something other than `undefined` or `false`, and returns that (so a boolean check
 * returns `true`); throws after the timeout. A probe that throws fails the wait at once: wrap it to mean "not yet"
 * (`() => ping().catch(() => false)`). For asserting on state that an asynchronous step settles.
 */
export async function waitFor<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitOptions = {},
): Promise<T> {
  const { timeoutMs = 15_000, everyMs = 50, what = 'condition' } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * Calls `read` until its result satisfies `done` (every 50 ms), and returns that result; throws after
 * `timeoutMs`. For asserting on state that an asynchronous step settles.
 */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const found = await waitFor(
    async () => {
      const value = await read();
      return done(value) ? { value } : undefined;
    },
    { timeoutMs, what: 'until' },
  );
  return found.value;
}
