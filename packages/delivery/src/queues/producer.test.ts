import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { inSpan, startTracing } from '@gatehook/core/tracing';
import { testConfig } from '@gatehook/testkit/api';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { startOtlpCollector } from '@gatehook/testkit/otlp-collector';
import { DeliveryQueues } from './producer';
import { queuePrefix, shardOf, waitingJobId } from './topology';
import { obliterate, queueOf, queuedJobs } from '@gatehook/testkit/queues';

const prefix = `test_${randomBytes(6).toString('hex')}`;
const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
const queues = new DeliveryQueues(redis, prefix);

afterAll(async () => {
  await obliterate(queues, 'fanout');
  await obliterate(queues, 'deliver');
  await queues.close();
  await redis.quit();
});

describe('DeliveryQueues', () => {
  it('a deduplicated fan-out does not stack on a waiting copy, but goes in again once that copy failed for good', async () => {
    const orgId = randomUUID();
    const ids = [randomUUID(), randomUUID()];
    // A chunk's copies go to the shard of its first event, where its deduplication id lives.
    const shard = shardOf(ids[0]!, queues.shards);
    const fanout = queueOf(queues, 'fanout', shard);
    await queues.fanout(orgId, ids, { recovered: true });
    await queues.fanout(orgId, ids, { recovered: true });
    expect(await fanout.getWaitingCount()).toBe(1);

    // The job fails for good (as after its last attempt while Postgres is down) and stays in Redis as failed.
    const connection = redis.duplicate();
    const worker = new Worker(
      'fanout',
      async () => {
        throw new UnrecoverableError('database down');
      },
      { connection, prefix: queuePrefix(prefix, 'fanout', shard) },
    );
    await once(worker, 'failed');
    await worker.close();
    await connection.quit();
    expect(await fanout.getFailedCount()).toBe(1);

    // The reconciler's next pass finds the same events not fanned out: its copy must be queued.
    await queues.fanout(orgId, ids, { recovered: true });
    expect(await fanout.getWaitingCount()).toBe(1);
  });

  it('merges concurrent fan-out enqueues into one job per organisation, and close waits for them', async () => {
    const own = new DeliveryQueues(redis, `test_${randomBytes(6).toString('hex')}`);
    const [a, b] = [randomUUID(), randomUUID()];
    const event = (orgId: string) => ({ orgId, id: randomUUID() });
    // The first call goes out alone; the four made while it is in flight go out together, one job per organisation.
    const first = [event(a)];
    const later = [[event(a)], [event(b), event(a)], [event(b)], [event(a)]];
    const calls = [own.fanoutMerged(first), ...later.map((events) => own.fanoutMerged(events))];
    await own.close();
    await Promise.all(calls);
    const cleanup = new DeliveryQueues(redis, own.prefix);
    const jobs = await queuedJobs(cleanup, 'fanout', ['waiting']);
    const idsOf = (orgId: string) =>
      jobs.filter((j) => j.data.orgId === orgId).map((j) => (j.data.eventIds as string[]).slice().sort());
    const expected = (orgId: string, events: { orgId: string; id: string }[]) =>
      events
        .filter((e) => e.orgId === orgId)
        .map((e) => e.id)
        .sort();
    expect(jobs).toHaveLength(3);
    expect(idsOf(a)).toEqual(expect.arrayContaining([expected(a, first), expected(a, later.flat())]));
    expect(idsOf(b)).toEqual([expected(b, later.flat())]);
    await obliterate(cleanup, 'fanout');
    await cleanup.close();
  });

  it('merges the waiting jobs of concurrent callers while an enqueue is in flight, each job with its own organisation', async () => {
    const own = new DeliveryQueues(redis, `test_${randomBytes(6).toString('hex')}`);
    // Deliveries of one shard, so that each enqueue is one addBulk there.
    const ids: string[] = [];
    while (ids.length < 6) {
      const id = randomUUID();
      if (shardOf(id, own.shards) === 0) ids.push(id);
    }
    const orgs = ids.map(() => randomUUID());
    const addBulk = jest.spyOn(queueOf(own, 'deliver', 0), 'addBulk');
    await Promise.all(ids.map((id, i) => own.deliverLater([{ id, dueAt: new Date(Date.now() + 60_000) }], orgs[i])));
    // The first two go at once (two in flight); the four made meanwhile go together.
    expect(addBulk).toHaveBeenCalledTimes(3);
    for (const [i, id] of ids.entries())
      expect((await queueOf(own, 'deliver', 0).getJob(waitingJobId(id)))?.data).toMatchObject({
        deliveryIds: [id],
        orgId: orgs[i],
      });
    await obliterate(own, 'deliver');
    await own.close();
  });

  it('gives each merged waiting job the trace of its own caller, and none to a caller outside any trace', async () => {
    const collector = await startOtlpCollector();
    const tracing = await startTracing(
      testConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }),
      'gatehook-test',
    );
    const own = new DeliveryQueues(redis, `test_${randomBytes(6).toString('hex')}`);
    try {
      const traceIds = [
        randomBytes(16).toString('hex'),
        randomBytes(16).toString('hex'),
        null,
        randomBytes(16).toString('hex'),
        null,
      ];
      const ids = traceIds.map(() => randomUUID());
      const later = (i: number) =>
        own.deliverLater([{ id: ids[i]!, dueAt: new Date(Date.now() + 60_000) }], randomUUID());
      // The first two go at once; the other three are merged into one enqueue, which runs in the first caller's trace.
      await Promise.all(
        traceIds.map((traceId, i) =>
          traceId === null
            ? later(i)
            : inSpan('gatehook.test', `00-${traceId}-${randomBytes(8).toString('hex')}-01`, {}, () => later(i)),
        ),
      );
      for (const [i, id] of ids.entries()) {
        const job = await queueOf(own, 'deliver', shardOf(id, own.shards)).getJob(waitingJobId(id));
        const trace = job?.data.trace as string | undefined;
        if (traceIds[i] === null) expect(trace).toBeUndefined();
        else expect(trace?.split('-')[1]).toBe(traceIds[i]);
      }
    } finally {
      await obliterate(own, 'deliver');
      await own.close();
      await tracing.stop();
      await collector.close();
    }
  });

  it("spreads deliver jobs over hash-tagged shards, a delivery's waiting job always on the shard of its id", async () => {
    expect(queuePrefix('gatehook', 'deliver', 3)).toBe('{gatehook:deliver:3}');
    expect(queuePrefix('gatehook', 'batch')).toBe('{gatehook:batch}');
    const ids = Array.from({ length: 64 }, () => randomUUID());
    await queues.deliverLater(
      ids.map((id) => ({ id, dueAt: new Date(Date.now() + 60_000) })),
      randomUUID(),
    );
    await queues.deliverLater(
      ids.map((id) => ({ id, dueAt: new Date(Date.now() + 60_000) })),
      randomUUID(),
    );
    const used = new Set<number>();
    for (const id of ids) {
      const shard = shardOf(id, queues.shards);
      used.add(shard);
      const job = await queueOf(queues, 'deliver', shard).getJob(waitingJobId(id));
      expect(job?.data.deliveryIds).toEqual([id]);
    }
    // One waiting job per delivery, however often it is put back, and more than one shard in use.
    expect((await queuedJobs(queues, 'deliver', ['delayed'])).length).toBe(ids.length);
    expect(used.size).toBeGreaterThan(1);
    // The same id picks the same shard in every process and version.
    expect(shardOf('0192f0c4-5a7e-7000-8000-000000000000', 8)).toBe(shardOf('0192f0c4-5a7e-7000-8000-000000000000', 8));
  });
});
