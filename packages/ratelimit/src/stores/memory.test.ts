import { MemoryCounterStore } from './memory';

describe('MemoryCounterStore', () => {
  let clock = 0;
  const batch = (key: string, calls = 2, windowMs = 1000) => ({
    orgId: 'org',
    owners: ['rule'],
    keys: [key],
    limits: [{ calls, windowMs, deny: true }],
    cost: 1,
  });

  it('drops counters whose window has ended, and only those', async () => {
    const store = new MemoryCounterStore({ now: () => clock });
    clock = 0;
    for (let i = 0; i < 100; i += 1) store.decide(batch(`short-${i}`, 2, 1000));
    store.decide(batch('long', 2, 60_000));
    expect(store.size).toBe(101);
    clock = 999;
    store.sweep();
    expect(store.size).toBe(101);
    clock = 1000;
    store.sweep();
    expect(store.size).toBe(1);
    // The surviving counter still holds its budget.
    expect(store.decide(batch('long', 2, 60_000)).outcomes[0]!.remaining).toBe(0);
    await store.close();
  });

  it('never holds more than maxCounters, dropping the oldest windows first', async () => {
    const store = new MemoryCounterStore({ now: () => 0, maxCounters: 50 });
    for (let i = 0; i < 500; i += 1) store.decide(batch(`k-${i}`));
    expect(store.size).toBe(50);
    // The newest counters survived: k-499 has used one call already.
    expect(store.decide(batch('k-499')).outcomes[0]!.remaining).toBe(0);
    await store.close();
  });

  it('caps one organisation at maxCountersPerOrg, evicting only its own counters', async () => {
    const store = new MemoryCounterStore({ now: () => 0, maxCountersPerOrg: 100, maxCounters: 150 });
    const spend = (orgId: string, key: string) =>
      store.decide({
        orgId,
        owners: ['rule'],
        keys: [key],
        limits: [{ calls: 1, windowMs: 60_000, deny: true }],
        cost: 1,
      });
    // The victim spends the whole budget of 40 counters.
    for (let i = 0; i < 40; i += 1) expect(spend('victim', `tool-${i}`).allowed).toBe(true);
    // The flooder sends 10,000 distinct tool keys, far past both ceilings.
    for (let i = 0; i < 10_000; i += 1) spend('flooder', `tool-${i}`);
    expect(store.sizeOf('flooder')).toBeLessThanOrEqual(100);
    expect(store.sizeOf('victim')).toBe(40);
    expect(store.size).toBeLessThanOrEqual(150);
    // Every one of the victim's budgets is still spent: none was evicted and reset.
    for (let i = 0; i < 40; i += 1) expect(spend('victim', `tool-${i}`).allowed).toBe(false);
    // The flooder's newest counters survived; its oldest went.
    expect(spend('flooder', 'tool-9999').allowed).toBe(false);
    expect(spend('flooder', 'tool-0').allowed).toBe(true);
    await store.close();
  });

  it('keeps the process ceiling by evicting the adding organisation, even when others fill it', async () => {
    const store = new MemoryCounterStore({ now: () => 0, maxCountersPerOrg: 1_000, maxCounters: 100 });
    const spend = (orgId: string, key: string) =>
      store.decide({
        orgId,
        owners: ['rule'],
        keys: [key],
        limits: [{ calls: 1, windowMs: 60_000, deny: true }],
        cost: 1,
      });
    for (let i = 0; i < 90; i += 1) spend('first', `k-${i}`);
    for (let i = 0; i < 1_000; i += 1) spend('second', `k-${i}`);
    expect(store.sizeOf('first')).toBe(90);
    expect(store.sizeOf('second')).toBe(10);
    expect(store.size).toBe(100);
    await store.close();
  });

  it('keeps counters of different organisations apart', async () => {
    const store = new MemoryCounterStore({ now: () => 0 });
    // The same rule and counter key in two organisations are two counters.
    const one = { orgId: 'a', owners: ['r'], keys: [''], limits: [{ calls: 1, windowMs: 1000, deny: true }], cost: 1 };
    expect(store.decide(one).allowed).toBe(true);
    expect(store.decide(one).allowed).toBe(false);
    expect(store.decide({ ...one, orgId: 'b' }).allowed).toBe(true);
    expect(store.sizeOf('a')).toBe(1);
    expect(store.sizeOf('b')).toBe(1);
    await store.close();
  });
});
