import { budgetOf } from './budget';

// A small deterministic generator, so a failing case is reproducible from its seed.
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('budgetOf', () => {
  it('derives the SPEC example: 1000 per 3600 s, no burst → 17 calls per 61.2 s', () => {
    expect(budgetOf({ limit: 1000, windowSeconds: 3600, burst: 0 })).toEqual({ calls: 17, windowMs: 61_200 });
  });

  it.each([
    // limit, W, burst → C, T ms
    [10, 60, 1, 10, 60_000], // a window of a minute or less keeps its own length and limit
    [10, 1, 1, 10, 1_000],
    [1, 1, 0, 1, 1_000],
    [5, 30, 5, 5, 30_000],
    [1, 3600, 0, 1, 3_600_000], // one call an hour: the window is the hour
    [1, 3600, 1, 1, 3_600_000],
    [60, 3600, 1, 1, 60_000], // one call a minute
    [100, 3600, 50, 50, 1_800_000], // burst sets the granularity: 50 calls per half hour
    [100, 3600, 100, 100, 3_600_000],
    [7, 3600, 0, 1, 514_286], // 3600/7 s rounds up to the next millisecond
    [2_147_483_647, 3600, 0, 35_791_395, 60_001], // 35,791,395 × 3600 / (2^31 - 1) s is just over a minute
    [2_147_483_647, 1, 2_147_483_647, 2_147_483_647, 1_000],
  ])('limit %i per %i s, burst %i → C %i, T %i ms', (limit, windowSeconds, burst, calls, windowMs) => {
    expect(budgetOf({ limit, windowSeconds, burst })).toEqual({ calls, windowMs });
  });

  // Property test over the whole parameter range (limit 1..2^31-1, W 1..3600, burst 0..limit), with the exact
  // rational definitions checked in BigInt so that no floating drift can hide.
  it('holds the burst rule exactly over 20,000 random rules', () => {
    const next = random(20261123);
    const pick = (max: number, min = 0) => min + Math.floor(next() * (max - min + 1));
    for (let i = 0; i < 20_000; i += 1) {
      // Half the cases near the small end, where rounding matters most.
      const limit = i % 2 === 0 ? pick(200, 1) : pick(2_147_483_647, 1);
      const windowSeconds = i % 3 === 0 ? pick(60, 1) : pick(3600, 1);
      const burst = i % 5 === 0 ? limit : pick(Math.min(limit, i % 2 === 0 ? limit : 1000));
      const { calls, windowMs } = budgetOf({ limit, windowSeconds, burst });
      const L = BigInt(limit);
      const W = BigInt(windowSeconds);
      const F = BigInt(Math.min(60, windowSeconds));
      const C = BigInt(calls);
      const T = BigInt(windowMs);
      const failures: string[] = [];
      const check = (ok: boolean, what: string) => {
        if (!ok) failures.push(what);
      };
      check(Number.isSafeInteger(calls) && Number.isSafeInteger(windowMs), 'integers');
      // C = max(burst, ceil(L·F / W)): the ceiling is the least integer q with q·W >= L·F.
      const q = (L * F + W - 1n) / W;
      check(C === (q > BigInt(burst) ? q : BigInt(burst)), 'C = max(burst, ceil(limit·min(60,W)/W))');
      check(C >= 1n && C <= L, '1 <= C <= limit');
      // T = max(ceil_ms(C·W / L), F): the admitted rate never exceeds limit / W ...
      check(T * L >= C * W * 1000n, 'C / T <= limit / W');
      check(T >= F * 1000n, 'T >= min(60, W)');
      // ... and T is the least such whole millisecond (or the floor of min(60, W) seconds).
      check(T === F * 1000n || (T - 1n) * L < C * W * 1000n, 'T is the least whole millisecond');
      // The window never exceeds W, so a counter never outlives the configured window.
      check(T <= W * 1000n, 'T <= W');
      if (failures.length > 0)
        throw new Error(`${JSON.stringify({ limit, windowSeconds, burst, calls, windowMs })}: ${failures.join('; ')}`);
    }
  });
});
