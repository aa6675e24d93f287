/**
 * Calls `read` until its result satisfies `done` (every 50 ms), and returns that result; throws after
 * `timeoutMs` with the last result. For asserting on state that an asynchronous step settles.
 */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`until: condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
