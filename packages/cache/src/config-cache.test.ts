import { ConfigCache } from './config-cache';

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('ConfigCache', () => {
  it('loads a key once for concurrent misses and serves it from memory afterwards', async () => {
    let loads = 0;
    const cache = new ConfigCache<string>({ max: 10, ttlMs: 60_000, load: async (k) => `${k}:${++loads}` });
    const [a, b] = await Promise.all([cache.get('x'), cache.get('x')]);
    expect([a, b]).toEqual(['x:1', 'x:1']);
    expect(await cache.get('x')).toBe('x:1');
    expect(cache.peek('x')).toBe('x:1');
    expect(loads).toBe(1);
  });

  it('caches a missing value (null) like any other', async () => {
    let loads = 0;
    const cache = new ConfigCache<string>({ max: 10, ttlMs: 60_000, load: async () => (loads++, null) });
    expect(await cache.get('gone')).toBeNull();
    expect(await cache.get('gone')).toBeNull();
    expect(loads).toBe(1);
  });

  it('reloads after an invalidation', async () => {
    let version = 1;
    const cache = new ConfigCache<number>({ max: 10, ttlMs: 60_000, load: async () => version });
    expect(await cache.get('k')).toBe(1);
    version = 2;
    cache.invalidate(['k']);
    expect(cache.peek('k')).toBeUndefined();
    expect(await cache.get('k')).toBe(2);
  });

  it('does not keep a load that raced an invalidation', async () => {
    const gate = deferred<number>();
    let calls = 0;
    const cache = new ConfigCache<number>({
      max: 10,
      ttlMs: 60_000,
      load: () => (++calls === 1 ? gate.promise : Promise.resolve(2)),
    });
    const first = cache.get('k');
    cache.invalidate(['k']); // the change commits while the first load still reads the old row
    gate.resolve(1);
    expect(await first).toBe(1); // its caller still gets an answer
    expect(cache.peek('k')).toBeUndefined();
    expect(await cache.get('k')).toBe(2);
  });

  it('is bounded: the least recently used entry goes first', async () => {
    const cache = new ConfigCache<string>({ max: 2, ttlMs: 60_000, load: async (k) => k });
    await cache.get('a');
    await cache.get('b');
    await cache.get('a');
    await cache.get('c');
    expect(cache.size).toBe(2);
    expect(cache.peek('b')).toBeUndefined();
    expect(cache.peek('a')).toBe('a');
  });

  it('expires entries after the TTL', async () => {
    let loads = 0;
    const cache = new ConfigCache<number>({ max: 10, ttlMs: 20, load: async () => ++loads });
    expect(await cache.get('k')).toBe(1);
    const deadline = Date.now() + 2000;
    while (cache.peek('k') !== undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(await cache.get('k')).toBe(2);
  });

  it('does not keep a failed load', async () => {
    let calls = 0;
    const cache = new ConfigCache<number>({
      max: 10,
      ttlMs: 60_000,
      load: async () => {
        if (++calls === 1) throw new Error('database down');
        return 7;
      },
    });
    await expect(cache.get('k')).rejects.toThrow('database down');
    expect(await cache.get('k')).toBe(7);
  });

  it('does not keep a value its keep rule refuses (an organisation with no webhooks yet): the next call sees a new one', async () => {
    let rows: string[] = [];
    const cache = new ConfigCache<string[]>({
      max: 10,
      ttlMs: 60_000,
      load: async () => [...rows],
      keep: (v) => v !== null && v.length > 0,
    });
    expect(await cache.get('org')).toEqual([]);
    expect(cache.peek('org')).toBeUndefined();
    rows = ['first webhook'];
    expect(await cache.get('org')).toEqual(['first webhook']);
    rows = ['first webhook', 'second'];
    expect(await cache.get('org')).toEqual(['first webhook']);
  });

  it('keeps missing values apart when missMax is set: a flood of unknown keys never evicts a value that exists', async () => {
    const loads: string[] = [];
    const cache = new ConfigCache<string>({
      max: 3,
      missMax: 2,
      ttlMs: 60_000,
      load: async (k) => (loads.push(k), k.startsWith('known') ? k : null),
    });
    for (const k of ['known-1', 'known-2', 'known-3']) await cache.get(k);
    for (let i = 0; i < 100; i++) expect(await cache.get(`unknown-${i}`)).toBeNull();
    loads.length = 0;
    for (const k of ['known-1', 'known-2', 'known-3']) expect(await cache.get(k)).toBe(k);
    expect(loads).toEqual([]);
    // The miss cache is bounded and still serves its most recent entries; an invalidation reaches it too.
    expect(cache.peek('unknown-99')).toBeNull();
    expect(cache.peek('unknown-0')).toBeUndefined();
    cache.invalidate(['unknown-99']);
    expect(cache.peek('unknown-99')).toBeUndefined();
    // Values that exist still evict each other past max, least recently used first.
    await cache.get('known-4');
    expect(cache.peek('known-1')).toBeUndefined();
  });
});
