import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { ConfigCache } from '@gatehook/cache/config-cache';
import { InvalidationBus, publishInvalidation } from '@gatehook/cache/invalidation';
import { probe } from '@gatehook/core/readiness';
import { connectRedis } from '@gatehook/core/redis';
import { queueRoundTrip, queuePrefix, shardOf } from '@gatehook/delivery';
import { startTestApi, testConfig } from '@gatehook/testkit/api';
import { createTestDatabase } from '@gatehook/testkit/database';
import { startTestEngine } from '@gatehook/testkit/engine';
import { auditEvent, startStack } from '@gatehook/testkit/stack';
import { TEST_REDIS_CLUSTER_NODES } from '@gatehook/testkit/env';
import { testRedis } from '@gatehook/testkit/redis';
import { until } from '@gatehook/testkit/until';
import type { Worker as Engine } from '@gatehook/worker/worker';
import { QueueConsumer } from '@gatehook/worker/consumers';
import { createLogger } from '@gatehook/core/logger';
import { queueOf } from '@gatehook/testkit/queues';

// The queue layer of the worker on the Redis the project gives (one server, or the 3-master cluster of the
// `redis-cluster` jest project): periodic work once per interval across workers, the watchdog, readiness, and the
// drain of the queue names of earlier versions.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

const onCluster = TEST_REDIS_CLUSTER_NODES !== '';

async function runs(engine: Engine, job: string): Promise<number> {
  return (await engine.metrics.periodicRuns.get()).values
    .filter((v) => v.labels.job === job && v.labels.outcome === 'ok')
    .reduce((n, v) => n + v.value, 0);
}

describe('the engine on this Redis', () => {
  it('uses the cluster client when the project runs on a cluster, and tags every queue by queue and shard', async () => {
    const config = testConfig({ DATABASE_URL: database.url, DELIVERY_QUEUE_SHARDS: '4' });
    const engine = await startTestEngine(config);
    try {
      const client = (await queueOf(engine.queues, 'deliver').getBackend().client) as unknown as Redis | Cluster;
      expect('nodes' in client).toBe(onCluster);
      expect(engine.queues.shardsOf('deliver').map((q) => q.opts.prefix)).toEqual(
        [0, 1, 2, 3].map((i) => `{${config.REDIS_PREFIX}:deliver:${i}}`),
      );
      expect(engine.queues.shardsOf('fanout')).toHaveLength(4);
      expect(engine.queues.shardsOf('batch').map((q) => q.opts.prefix)).toEqual([`{${config.REDIS_PREFIX}:batch}`]);
      expect(engine.periodic.queue.opts.prefix).toBe(`{${config.REDIS_PREFIX}:periodic}`);
      // Readiness: a round trip through every queue.
      await engine.roundTrip();
    } finally {
      await engine.stop();
    }
  });
});

describe('periodic work', () => {
  it('runs once per interval across two workers, and goes on when the worker that ran it is gone', async () => {
    const interval = 400;
    const config = testConfig({ DATABASE_URL: database.url, RECONCILE_INTERVAL_MS: String(interval) });
    const [a, b] = [await startTestEngine(config), await startTestEngine(config)];
    let bStopped = false;
    try {
      // Counted over several intervals once both run: one run per interval in all, not one per worker.
      await until(
        async () => (await runs(a, 'reconcile')) + (await runs(b, 'reconcile')),
        (n) => n >= 1,
        5_000,
      );
      const before = (await runs(a, 'reconcile')) + (await runs(b, 'reconcile'));
      const started = Date.now();
      await new Promise((r) => setTimeout(r, interval * 10));
      const intervals = (Date.now() - started) / interval;
      const made = (await runs(a, 'reconcile')) + (await runs(b, 'reconcile')) - before;
      // The scheduler keeps a fixed grid: a run made late on a busy machine is made up right after, so the count may
      // exceed the intervals by a few; one run per worker per interval would be twice as many.
      expect(made).toBeGreaterThanOrEqual(Math.floor(intervals) - 3);
      expect(made).toBeLessThanOrEqual(Math.ceil(intervals) + 3);
      // Three schedulers in all (reconcile, retention, statistics), however many workers upserted them.
      expect(await a.periodic.queue.getJobSchedulersCount()).toBe(3);

      // The worker that ran the last one goes away; the other takes the next runs.
      const last = (await runs(a, 'reconcile')) >= (await runs(b, 'reconcile')) ? a : b;
      const other = last === a ? b : a;
      await last.stop();
      if (last === b) bStopped = true;
      const otherBefore = await runs(other, 'reconcile');
      await until(
        async () => (await runs(other, 'reconcile')) - otherBefore,
        (n) => n >= 4,
        10_000,
      );
    } finally {
      await a.stop();
      if (!bStopped) await b.stop();
    }
  });
});

/** Stops a connection from reading Redis's replies: a half-open socket, as the worker sees it. */
function stall(client: Redis | Cluster): void {
  const nodes = 'nodes' in client ? (client as Cluster).nodes() : [client as Redis];
  for (const node of nodes) node.stream?.pause();
}

describe('periodic work after Redis lost its schedulers', () => {
  it('is scheduled again by the workers (a Redis restarted empty, FLUSHALL)', async () => {
    const config = testConfig({ DATABASE_URL: database.url, RECONCILE_INTERVAL_MS: '300' });
    const engine = await startTestEngine(config);
    try {
      await until(
        () => runs(engine, 'reconcile'),
        (n) => n >= 1,
        5_000,
      );
      for (const name of ['reconcile', 'retention', 'statistics']) await engine.periodic.queue.removeJobScheduler(name);
      await engine.periodic.queue.obliterate({ force: true });
      const after = await runs(engine, 'reconcile');
      await until(
        () => runs(engine, 'reconcile'),
        (n) => n >= after + 3,
        10_000,
      );
      expect(await engine.periodic.queue.getJobSchedulersCount()).toBe(3);
    } finally {
      await engine.stop();
    }
  });
});

describe('the queue watchdog', () => {
  it('recreates a worker whose blocking connection stopped taking jobs while jobs wait', async () => {
    const config = testConfig({ DATABASE_URL: database.url, QUEUE_WATCHDOG_MS: '1000', DELIVERY_QUEUE_SHARDS: '2' });
    const engine = await startTestEngine(config);
    try {
      const deliveryId = randomUUID();
      const shard = shardOf(deliveryId, 2);
      const consumer = engine
        .consumers()
        .find((c) => c.name === `${queuePrefix(config.REDIS_PREFIX, 'deliver', shard)}:deliver`)!;
      const blocking = (await consumer.current.getBackend().blockingClient!) as unknown as Redis | Cluster;
      // Let the worker block on its connection, then stop it from hearing the answer.
      await new Promise((r) => setTimeout(r, 300));
      stall(blocking);
      const restarts = async () =>
        (await engine.metrics.queueWorkerRestarts.get()).values.reduce((n, v) => n + v.value, 0);
      // A job for a delivery that does not exist: the run finds nothing to lease and completes.
      await engine.queues.deliverNow([deliveryId], randomUUID());
      await until(restarts, (n) => n >= 1, 10_000);
      await until(
        async () => await queueOf(engine.queues, 'deliver', shard).getJobCounts('wait', 'active'),
        (c) => c.wait === 0 && c.active === 0,
        10_000,
      );
    } finally {
      await engine.stop();
    }
  });

  it('leaves alone a worker that has no room, or nothing waiting', async () => {
    // One consumer of concurrency 1 on a queue of its own, its looks made with a chosen clock: two looks a whole
    // watchdog time apart are what it takes to restart a worker that has room while jobs wait.
    const stuckAfterMs = 1_000;
    const connection = testRedis();
    const prefix = `{test-watchdog-${randomUUID()}}`;
    const queue = new Queue('deliver', { connection, prefix });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const processed: string[] = [];
    const consumer = new QueueConsumer({
      queue,
      processor: async (job) => {
        processed.push(job.name);
        if (job.name === 'holds') await held;
      },
      worker: { connection, prefix, concurrency: 1 },
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    const looks = async () => {
      const now = Date.now();
      return [await consumer.check(stuckAfterMs, now), await consumer.check(stuckAfterMs, now + stuckAfterMs + 1)];
    };
    try {
      // No room: the one slot holds a job while another waits.
      await queue.add('holds', {});
      await until(
        () => Promise.resolve(processed),
        (p) => p.includes('holds'),
        10_000,
      );
      await queue.add('waits', {});
      expect(await queue.getJobCounts('wait')).toEqual({ wait: 1 });
      expect(await looks()).toEqual([false, false]);
      expect(consumer.current.isRunning()).toBe(true);

      // Nothing waiting: the slot is free and the queue empty.
      release();
      await until(
        async () => ({ processed, counts: await queue.getJobCounts('wait', 'active') }),
        (s) => s.processed.includes('waits') && s.counts.wait === 0 && s.counts.active === 0,
        10_000,
      );
      expect(await looks()).toEqual([false, false]);

      // The control: room and a job waiting that the worker does not take (its blocking connection no longer reads)
      // is what a restart takes, so the looks above were made on a consumer that would have restarted.
      stall((await consumer.current.getBackend().blockingClient!) as unknown as Redis | Cluster);
      await queue.add('unserved', {});
      expect(await looks()).toEqual([false, true]);
    } finally {
      release();
      await consumer.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      connection.disconnect();
    }
  });
});

describe('readiness', () => {
  it('of the API is a round trip through every queue it produces to', async () => {
    const api = await startTestApi({ config: testConfig({ DATABASE_URL: database.url }) });
    try {
      const r = await api.call('GET', '/readyz');
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
    } finally {
      await api.close();
    }
  });

  it('fails within the probe time when a queue cannot be reached', async () => {
    const dead = connectRedis({ url: 'redis://127.0.0.1:1' }, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
    dead.on('error', () => undefined);
    const queue = new Queue('deliver', { connection: dead, prefix: '{x:deliver:0}' });
    queue.on('error', () => undefined);
    const started = Date.now();
    const result = await probe({ redis: () => queueRoundTrip([queue]) }, 500);
    expect(result.checks.redis).toBe('failed');
    expect(Date.now() - started).toBeLessThan(2_000);
    await queue.close().catch(() => undefined);
    dead.disconnect();
  });
});

describe('configuration invalidation', () => {
  it('reaches a subscriber whatever node it and the publisher use', async () => {
    const prefix = `test-${randomUUID()}`;
    const publisher = testRedis({ maxRetriesPerRequest: 1 });
    const caches: ConfigCache<number>[] = [];
    const buses: InvalidationBus[] = [];
    try {
      for (let i = 0; i < 3; i += 1) {
        const bus = new InvalidationBus(testRedis(), prefix);
        buses.push(bus);
        const cache = new ConfigCache<number>({ max: 10, ttlMs: 600_000, load: async () => 1 });
        await cache.follow(bus, 'webhooks');
        caches.push(cache);
      }
      for (let round = 0; round < 5; round += 1) {
        const key = `org-${round}`;
        for (const cache of caches) await cache.get(key);
        const started = Date.now();
        await publishInvalidation(publisher, prefix, 'webhooks', [key]);
        await until(async () => caches.every((c) => c.peek(key) === undefined), Boolean, 1_000);
        expect(Date.now() - started).toBeLessThan(1_000);
      }
    } finally {
      await Promise.all(buses.map((b) => b.close()));
      publisher.disconnect();
    }
  });
});

describe('a webhook created just before an event', () => {
  it('gets the event, even when the worker had just found its organisation without webhooks', async () => {
    const stack = await startStack();
    try {
      for (let round = 0; round < 3; round += 1) {
        // The worker fans out an event of an organisation that has no active webhook ...
        const before = await stack.ingest([auditEvent()]);
        await stack.settle(before);
        for (const hook of (await stack.api.call('GET', '/webhooks', { key: stack.org.admin })).body.items as {
          id: string;
        }[]) {
          await stack.api.call('DELETE', `/webhooks/${hook.id}`, { key: stack.org.admin });
        }
        const emptied = await stack.ingest([auditEvent()]);
        await stack.settle(emptied);
        // ... then a webhook is created and an event sent at once: it must arrive, whatever the invalidation does.
        const receiver = await stack.receiver();
        await stack.webhook(receiver, { events: ['policy.created'] });
        const [id] = await stack.ingest([auditEvent()]);
        await receiver.waitFor(
          (requests) => requests.some((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id === id),
          10_000,
        );
      }
    } finally {
      await stack.close();
    }
  });
});
