import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { startRedisServer } from '@gatehook/testkit/processes';
import { counterKey } from '../counter-key';
import { FailoverStore } from './failover';
import { RedisCounterStore } from './redis';

jest.setTimeout(30_000);

describe('FailoverStore (fail open)', () => {
  it('does not count a timed-out Lua call a second time in the fallback counters', async () => {
    // A private Redis: CLIENT PAUSE there holds nobody else's commands.
    const server = await startRedisServer();
    const redis = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true });
    const admin = new Redis(server.url);
    await redis.connect();
    const prefix = `test_${randomBytes(4).toString('hex')}`;
    const store = new RedisCounterStore(redis, { prefix, timeoutMs: 100 });
    const counters = new FailoverStore(store, { failMode: 'open', retryStoreAfterMs: 60_000 });
    const orgId = randomUUID();
    const batch = { orgId, owners: ['r'], keys: [''], limits: [{ calls: 2, windowMs: 60_000, deny: true }], cost: 1 };
    try {
      await store.checkAndConsume({ ...batch, owners: ['warm-up'] }); // loads the script
      // Writes (and so scripts) wait for 500 ms: the call times out, and runs in Redis afterwards.
      await admin.client('PAUSE', 500, 'WRITE');
      const timedOut = await counters.decide(batch);
      expect(timedOut).toMatchObject({ source: 'fallback', result: { allowed: true } });

      // Redis rests now; the next call is counted by the fallback alone. Had the timed-out call been counted
      // there too, this one would find the budget of 2 spent.
      const next = await counters.decide(batch);
      expect(next).toMatchObject({ source: 'fallback', result: { allowed: true, outcomes: [{ remaining: 1 }] } });

      // The timed-out script did run once the pause ended: Redis counted it, once.
      const key = counterKey(prefix, orgId, 'r', '');
      const deadline = Date.now() + 5_000;
      while ((await admin.hget(key, 'u')) === null && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(await admin.hget(key, 'u')).toBe('1');
    } finally {
      await counters.close();
      redis.disconnect();
      admin.disconnect();
      await server.close();
    }
  });

  it('fails closed when so configured, and asks Redis again after the rest', async () => {
    let clock = 0;
    const dead = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    dead.on('error', () => undefined);
    const counters = new FailoverStore(new RedisCounterStore(dead, { prefix: 'x', timeoutMs: 100 }), {
      failMode: 'closed',
      retryStoreAfterMs: 1_000,
      now: () => clock,
    });
    const batch = {
      orgId: randomUUID(),
      owners: ['r'],
      keys: [''],
      limits: [{ calls: 1, windowMs: 1000, deny: true }],
      cost: 1,
    };
    expect(await counters.decide(batch)).toBe('closed');
    // Resting: no promise, no call to Redis.
    expect(counters.decide(batch)).toBe('closed');
    clock = 1_000;
    expect(counters.decide(batch)).toBeInstanceOf(Promise);
    dead.disconnect();
  });
});
