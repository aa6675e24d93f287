import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { ConfigCache } from './config-cache';
import { InvalidationBus, publishInvalidation } from './invalidation';
import { waitFor } from '@gatehook/testkit/until';

const until = (check: () => boolean, timeoutMs = 2000) => waitFor(check, { timeoutMs, everyMs: 5 });

describe('InvalidationBus', () => {
  const prefix = `test-${randomUUID()}`;
  const publisher = new Redis(TEST_REDIS_URL);
  const buses: InvalidationBus[] = [];
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    publisher.disconnect();
  });

  function process(values: Map<string, number>) {
    const bus = new InvalidationBus(new Redis(TEST_REDIS_URL), prefix);
    buses.push(bus);
    const cache = new ConfigCache<number>({ max: 100, ttlMs: 600_000, load: async (k) => values.get(k) ?? null });
    return { bus, cache };
  }

  it('drops the named keys in every process within a second, and only those', async () => {
    const source = new Map([
      ['a', 1],
      ['b', 1],
    ]);
    const one = process(source);
    const two = process(source);
    await one.cache.follow(one.bus, 'things');
    await two.cache.follow(two.bus, 'things');
    for (const p of [one, two]) {
      await p.cache.get('a');
      await p.cache.get('b');
    }
    source.set('a', 2);
    const started = Date.now();
    await publishInvalidation(publisher, prefix, 'things', ['a']);
    await until(() => one.cache.peek('a') === undefined && two.cache.peek('a') === undefined);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await two.cache.get('a')).toBe(2);
    expect(two.cache.peek('b')).toBe(1);
  });

  it('drops what was cached before the subscription was confirmed, since that may have missed a message', async () => {
    const p = process(new Map([['a', 1]]));
    await p.cache.get('a');
    expect(p.cache.peek('a')).toBe(1);
    await p.cache.follow(p.bus, 'things');
    expect(p.cache.peek('a')).toBeUndefined();
  });

  it('does not cross topics or prefixes', async () => {
    const source = new Map([['a', 1]]);
    const p = process(source);
    await p.cache.follow(p.bus, 'mine');
    await p.cache.get('a');
    await publishInvalidation(publisher, prefix, 'other', ['a']);
    await publishInvalidation(publisher, `${prefix}-x`, 'mine', ['a']);
    // A marker on the followed topic proves the earlier messages were delivered (Redis keeps order per connection).
    await p.cache.get('marker');
    await publishInvalidation(publisher, prefix, 'mine', ['marker']);
    await until(() => p.cache.peek('marker') === undefined);
    expect(p.cache.peek('a')).toBe(1);
  });

  it('clears every cache when its connection comes back, since messages were missed meanwhile', async () => {
    const source = new Map([['a', 1]]);
    const subscriber = new Redis(TEST_REDIS_URL);
    const bus = new InvalidationBus(subscriber, prefix);
    buses.push(bus);
    const cache = new ConfigCache<number>({ max: 10, ttlMs: 600_000, load: async (k) => source.get(k) ?? null });
    await cache.follow(bus, 'things');
    await cache.get('a');
    subscriber.disconnect(true); // reconnects on its own
    await until(() => cache.peek('a') === undefined, 5000);
  });
});
