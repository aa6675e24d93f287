import { checkAndConsume, type CounterLimit, type CounterState } from './consume';

const deny = (calls: number, windowMs = 60_000): CounterLimit => ({ calls, windowMs, deny: true });
const logOnly = (calls: number, windowMs = 60_000): CounterLimit => ({ calls, windowMs, deny: false });

// Runs calls through the pure function the way a store does: keep the written states.
function counters(limits: CounterLimit[]) {
  const states: (CounterState | undefined)[] = limits.map(() => undefined);
  return {
    states,
    call(cost: number, now: number) {
      const result = checkAndConsume(states, limits, cost, now);
      result.writes.forEach((w, i) => {
        if (w) states[i] = w;
      });
      return result;
    },
  };
}

describe('checkAndConsume', () => {
  it('admits C calls per window, then denies until the window ends', () => {
    const c = counters([deny(3, 1000)]);
    expect([1, 2, 3, 4].map(() => c.call(1, 100).allowed)).toEqual([true, true, true, false]);
    expect(c.call(1, 100).outcomes[0]).toEqual({ remaining: 0, resetAt: 1100, exceeded: true, firstExceeded: false });
    expect(c.call(1, 1099).allowed).toBe(false);
    // The first call at start + T opens a new window starting at that call.
    const next = c.call(1, 1100);
    expect(next.allowed).toBe(true);
    expect(next.outcomes[0]).toEqual({ remaining: 2, resetAt: 2100, exceeded: false, firstExceeded: false });
  });

  it('a denied call consumes no counter; an allowed one consumes all with budget', () => {
    const c = counters([deny(10), deny(2), logOnly(1)]);
    expect(c.call(1, 0).allowed).toBe(true);
    expect(c.call(1, 0).outcomes.map((o) => o.remaining)).toEqual([8, 0, 0]);
    const denied = c.call(1, 0);
    expect(denied.allowed).toBe(false);
    expect(denied.outcomes.map((o) => [o.remaining, o.exceeded])).toEqual([
      [8, false],
      [0, true],
      [0, true],
    ]);
    expect(c.states.map((s) => s?.used)).toEqual([2, 2, 1]);
  });

  it('a log_only rule never denies; it reports its exceedance once per window', () => {
    const c = counters([logOnly(1, 1000)]);
    expect(c.call(1, 0).outcomes[0]!.firstExceeded).toBe(false);
    const second = c.call(1, 10);
    expect(second.allowed).toBe(true);
    expect(second.outcomes[0]).toMatchObject({ exceeded: true, firstExceeded: true });
    expect(c.call(1, 20).outcomes[0]).toMatchObject({ exceeded: true, firstExceeded: false });
    // A new window: reported again once.
    expect(c.call(1, 1000).outcomes[0]!.exceeded).toBe(false);
    expect(c.call(1, 1001).outcomes[0]).toMatchObject({ exceeded: true, firstExceeded: true });
  });

  it('cost counts as that many calls; a cost above the remaining budget exceeds without consuming', () => {
    const c = counters([deny(10)]);
    expect(c.call(7, 0).outcomes[0]!.remaining).toBe(3);
    const tooMuch = c.call(4, 0);
    expect(tooMuch.allowed).toBe(false);
    expect(tooMuch.outcomes[0]!.remaining).toBe(3);
    expect(c.call(3, 0).outcomes[0]!.remaining).toBe(0);
  });

  it('a denied call opens no window: the window starts at the first admitted call', () => {
    const c = counters([deny(10, 1000), deny(1, 1000)]);
    c.call(1, 0); // both windows start at 0
    c.call(1, 500); // denied by the second
    expect(c.states[0]).toEqual({ start: 0, used: 1, reported: false });
    expect(c.call(1, 1000).outcomes.map((o) => o.resetAt)).toEqual([2000, 2000]);
  });

  it('a rule edited to a smaller C reports nothing left, never a negative remaining', () => {
    const states: CounterState[] = [{ start: 0, used: 8, reported: false }];
    const result = checkAndConsume(states, [deny(5)], 1, 10);
    expect(result.allowed).toBe(false);
    expect(result.outcomes[0]!.remaining).toBe(0);
  });
});
