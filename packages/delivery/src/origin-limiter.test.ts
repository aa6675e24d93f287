import { MAX_TURN_AWAY_MS, MIN_TURN_AWAY_MS, OriginLimiter } from './origin-limiter';

/** Resolves with the promise's value if it is already settled, or 'pending' if it is not after this turn. */
function settledNow<T>(promise: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

describe('OriginLimiter', () => {
  it('caps requests in flight per origin', () => {
    const limiter = new OriginLimiter(2);
    expect([limiter.tryAcquire('https://a'), limiter.tryAcquire('https://a'), limiter.tryAcquire('https://a')]).toEqual([true, true, false]);
    expect(limiter.isFull('https://a')).toBe(true);
    expect(limiter.tryAcquire('https://b')).toBe(true);
    limiter.release('https://a');
    expect(limiter.isFull('https://a')).toBe(false);
  });

  it('remembers waiting deliveries, bounded', () => {
    const limiter = new OriginLimiter(1, 3);
    for (const id of ['d1', 'd2', 'd3']) limiter.noteWaiting(id, 'https://a');
    expect(limiter.waitingFor('d2')).toBe('https://a');
    limiter.noteWaiting('d4', 'https://a'); // past the bound the memory starts over
    expect(limiter.waitingFor('d1')).toBeUndefined();
    expect(limiter.waitingFor('d4')).toBe('https://a');
    limiter.doneWaiting('d4');
    expect(limiter.waitingFor('d4')).toBeUndefined();
  });
});

describe('OriginLimiter waiting for a turn', () => {
  const far = () => Date.now() + 60_000;

  it('hands a freed origin slot to the oldest waiter, not to a newcomer', async () => {
    const limiter = new OriginLimiter(1);
    expect(await limiter.acquire('https://a', far())).toBe(true);
    const order: string[] = [];
    const first = limiter.acquire('https://a', far()).then((ok) => order.push(`first ${ok}`));
    const second = limiter.acquire('https://a', far()).then((ok) => order.push(`second ${ok}`));
    expect(limiter.tryAcquire('https://a')).toBe(false);
    limiter.release('https://a');
    await first;
    expect(order).toEqual(['first true']);
    limiter.release('https://a');
    await second;
    expect(order).toEqual(['first true', 'second true']);
    limiter.release('https://a');
    expect(limiter.isFull('https://a')).toBe(false);
  });

  it('gives up at the deadline holding nothing, and the slot it waited for stays usable', async () => {
    const limiter = new OriginLimiter(1);
    expect(await limiter.acquire('https://dead', far())).toBe(true);
    expect(await limiter.acquire('https://dead', Date.now() + 30)).toBe(false);
    limiter.release('https://dead');
    expect(limiter.isFull('https://dead')).toBe(false);
    expect(limiter.tryAcquire('https://dead')).toBe(true);
    limiter.release('https://dead');
  });

  it('waits for one of the process-wide slots too, and gives the origin slot back when that wait fails', async () => {
    const limiter = new OriginLimiter(10, 100, 1);
    expect(await limiter.acquire('https://a', far())).toBe(true);
    let second: boolean | undefined;
    const waiting = limiter.acquire('https://b', far()).then((ok) => (second = ok));
    await Promise.resolve();
    expect(second).toBeUndefined();
    limiter.release('https://a');
    await waiting;
    expect(second).toBe(true);
    // The process is full again: a third request times out and leaves its origin's slot free.
    expect(await limiter.acquire('https://c', Date.now() + 30)).toBe(false);
    expect(limiter.isFull('https://c')).toBe(false);
    limiter.release('https://b');
  });
});

describe('OriginLimiter pacing turned-away deliveries', () => {
  const origin = 'https://slow.example';

  it('sends a delivery back after the waiters ahead of it can have had their turns at the origin pace', () => {
    const limiter = new OriginLimiter(2);
    expect(limiter.tryAcquire(origin)).toBe(true);
    limiter.release(origin, { heldMs: 1_000 });
    for (let i = 0; i < 10; i += 1) limiter.noteWaiting(`d${i}`, origin);
    expect(limiter.waitersOf(origin)).toBe(10);
    // 10 ahead, 2 slots, 1 s a request: 5 s, spread by up to 1 s more.
    const now = Date.now();
    const wait = limiter.retryAt(origin, now).getTime() - now;
    expect(wait).toBeGreaterThanOrEqual(5_000);
    expect(wait).toBeLessThan(6_000);
  });

  it('keeps the wait within its floor and its ceiling', () => {
    const limiter = new OriginLimiter(1);
    const now = Date.now();
    // No pace known yet: the floor.
    const unknown = limiter.retryAt(origin, now).getTime() - now;
    expect(unknown).toBeGreaterThanOrEqual(MIN_TURN_AWAY_MS);
    expect(unknown).toBeLessThan(2 * MIN_TURN_AWAY_MS);
    expect(limiter.tryAcquire(origin)).toBe(true);
    limiter.release(origin, { heldMs: 30_000 });
    for (let i = 0; i < 100; i += 1) limiter.noteWaiting(`d${i}`, origin);
    const capped = limiter.retryAt(origin, now).getTime() - now;
    expect(capped).toBeGreaterThanOrEqual(MAX_TURN_AWAY_MS);
    expect(capped).toBeLessThan(MAX_TURN_AWAY_MS + 1_000);
  });

  it('counts each waiting delivery once, and forgets it when it gets a turn', () => {
    const limiter = new OriginLimiter(1);
    limiter.noteWaiting('d1', origin);
    limiter.noteWaiting('d1', origin);
    limiter.noteWaiting('d2', origin);
    limiter.noteWaiting('d3', 'https://other.example');
    expect(limiter.waitersOf(origin)).toBe(2);
    limiter.noteWaiting('d3', origin); // now waits for this origin instead
    expect([limiter.waitersOf(origin), limiter.waitersOf('https://other.example')]).toEqual([3, 0]);
    for (const id of ['d1', 'd2', 'd3']) limiter.doneWaiting(id);
    expect(limiter.waitersOf(origin)).toBe(0);
  });

  it('turns a request away at once when the waiters ahead cannot all have a turn before its deadline', async () => {
    const limiter = new OriginLimiter(1);
    expect(limiter.tryAcquire(origin)).toBe(true);
    limiter.release(origin, { heldMs: 120_000 }); // a request here takes two minutes
    expect(limiter.tryAcquire(origin)).toBe(true);
    // Waiting would take two minutes; the deadline is one: refused without waiting for it.
    expect(await settledNow(limiter.acquire(origin, Date.now() + 60_000))).toBe(false);
    // A fast origin's request waits for its turn as before.
    const fast = 'https://fast.example';
    expect(limiter.tryAcquire(fast)).toBe(true);
    limiter.release(fast, { heldMs: 5 });
    expect(limiter.tryAcquire(fast)).toBe(true);
    const waiting = limiter.acquire(fast, Date.now() + 60_000);
    expect(await settledNow(waiting)).toBe('pending');
    limiter.release(fast);
    expect(await waiting).toBe(true);
    limiter.release(fast);
    limiter.release(origin);
    expect([limiter.isFull(origin), limiter.isFull(fast)]).toEqual([false, false]);
  });
});
