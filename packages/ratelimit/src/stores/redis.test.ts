import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { connectRedis } from '@gatehook/core/redis';
import { TEST_REDIS_CLUSTER_NODES } from '@gatehook/testkit/env';
import { startRedisServer } from '@gatehook/testkit/processes';
import { keysEverywhere, onEveryMaster, testRedis } from '@gatehook/testkit/redis';
import { startRedisCluster } from '@gatehook/testkit/redis-cluster';
import type { CounterLimit } from '../consume';
import { MemoryCounterStore } from './memory';
import { RedisCounterStore } from './redis';

const prefix = `test_${randomBytes(6).toString('hex')}`;
const redis = testRedis({ maxRetriesPerRequest: 1 });
const store = new RedisCounterStore(redis, { prefix, timeoutMs: 2000 });
const onCluster = TEST_REDIS_CLUSTER_NODES !== '';

afterAll(async () => {
  for (const key of await keysEverywhere(redis, `${prefix}:*`)) await redis.del(key);
  await redis.quit();
});

describe('RedisCounterStore', () => {
  it('decides exactly like the memory store (differential, 3,000 random checks)', async () => {
    const memory = new MemoryCounterStore();
    const orgId = randomUUID();
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    // Six counters with small budgets so that denials, log_only exceedances and costs all happen often.
    const pool: { owner: string; key: string; limit: CounterLimit }[] = Array.from({ length: 6 }, (_, i) => ({
      owner: `rule-${i}`,
      key: i % 2 === 0 ? '' : `user-${i}`,
      limit: { calls: 5 + rand(40), windowMs: 3_600_000, deny: i % 3 !== 2 },
    }));
    for (let step = 0; step < 3_000; step += 1) {
      const chosen = pool.filter(() => rand(2) === 0);
      if (chosen.length === 0) continue;
      const batch = {
        orgId,
        owners: chosen.map((c) => c.owner),
        keys: chosen.map((c) => c.key),
        limits: chosen.map((c) => c.limit),
        cost: 1 + (rand(5) === 0 ? rand(6) : 0),
      };
      const [fromRedis, fromMemory] = [await store.checkAndConsume(batch), memory.decide(batch)];
      const shape = (d: typeof fromRedis) => ({
        allowed: d.allowed,
        outcomes: d.outcomes.map(({ remaining, exceeded, firstExceeded }) => ({ remaining, exceeded, firstExceeded })),
      });
      if (JSON.stringify(shape(fromRedis)) !== JSON.stringify(shape(fromMemory))) {
        throw new Error(
          `step ${step}: redis ${JSON.stringify(shape(fromRedis))} memory ${JSON.stringify(shape(fromMemory))}`,
        );
      }
    }
    await memory.close();
  });

  it("hash-tags every key by organisation and expires a counter when its window ends, on Redis's clock", async () => {
    const orgId = randomUUID();
    const decision = await store.checkAndConsume({
      orgId,
      owners: ['r1', 'r2'],
      keys: ['', 'u'],
      limits: [
        { calls: 3, windowMs: 5000, deny: true },
        { calls: 3, windowMs: 60_000, deny: true },
      ],
      cost: 1,
    });
    const [seconds, micros] = await redis.time();
    const serverNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    expect(Math.abs(decision.now - serverNow)).toBeLessThan(1000);
    expect(decision.outcomes.map((o) => o.resetAt - decision.now)).toEqual([5000, 60_000]);
    const keys = (await keysEverywhere(redis, `${prefix}:rl:{${orgId}}:*`)).sort();
    expect(keys).toEqual([`${prefix}:rl:{${orgId}}:r1:`, `${prefix}:rl:{${orgId}}:r2:u`]);
    const ttl = await redis.pttl(keys[0]!);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(5000);
  });

  it('loads the script again into a Redis that forgot it (SCRIPT FLUSH)', async () => {
    // On a Redis of its own (a cluster of its own when the suite runs on one): on the shared one, the next script
    // each connection of the test files running beside this one sends would meet NOSCRIPT, and ioredis sends a lone
    // command again but not one inside a MULTI (BullMQ's), which fails.
    const own = onCluster ? await startRedisCluster({ masters: 3 }) : await startRedisServer();
    const connection = connectRedis(
      'seeds' in own ? { url: own.seeds[0]!, clusterNodes: own.seeds } : { url: own.url },
      { maxRetriesPerRequest: 1 },
    );
    connection.on('error', () => undefined);
    try {
      const forgetful = new RedisCounterStore(connection, { prefix, timeoutMs: 2000 });
      const batch = {
        orgId: randomUUID(),
        owners: ['r'],
        keys: [''],
        limits: [{ calls: 2, windowMs: 60_000, deny: true }],
        cost: 1,
      };
      await forgetful.checkAndConsume(batch);
      await onEveryMaster(connection, (node) => node.script('FLUSH'));
      const after = await forgetful.checkAndConsume(batch);
      expect(after.outcomes[0]!.remaining).toBe(0);
    } finally {
      connection.disconnect();
      await own.close();
    }
  });

  it('fails (for the limiter to apply its fail mode) when Redis does not answer in time', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    dead.on('error', () => undefined);
    const unreachable = new RedisCounterStore(dead, { prefix, timeoutMs: 100 });
    await expect(
      unreachable.checkAndConsume({
        orgId: randomUUID(),
        owners: ['r'],
        keys: ['k'],
        limits: [{ calls: 1, windowMs: 1000, deny: true }],
        cost: 1,
      }),
    ).rejects.toThrow();
    dead.disconnect();
  });
});
