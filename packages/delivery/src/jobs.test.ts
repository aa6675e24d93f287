import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { DeliveryQueues } from './jobs';

const prefix = `test_${randomBytes(6).toString('hex')}`;
const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
const queues = new DeliveryQueues(redis, prefix);

afterAll(async () => {
  await queues.queue('fanout').obliterate({ force: true });
  await queues.close();
  await redis.quit();
});

describe('DeliveryQueues', () => {
  it('a deduplicated fan-out does not stack on a waiting copy, but goes in again once that copy failed for good', async () => {
    const orgId = randomUUID();
    const ids = [randomUUID(), randomUUID()];
    const fanout = queues.queue('fanout');
    await queues.fanout(orgId, ids, { recovered: true });
    await queues.fanout(orgId, ids, { recovered: true });
    expect(await fanout.getWaitingCount()).toBe(1);

    // The job fails for good (as after its last attempt while Postgres is down) and stays in Redis as failed.
    const connection = redis.duplicate();
    const worker = new Worker('fanout', async () => {
      throw new UnrecoverableError('database down');
    }, { connection, prefix });
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
    const fanout = own.queue('fanout');
    const [a, b] = [randomUUID(), randomUUID()];
    const event = (orgId: string) => ({ orgId, id: randomUUID() });
    // The first call goes out alone; the four made while it is in flight go out together, one job per organisation.
    const first = [event(a)];
    const later = [[event(a)], [event(b), event(a)], [event(b)], [event(a)]];
    const calls = [own.fanoutMerged(first), ...later.map((events) => own.fanoutMerged(events))];
    await own.close();
    await Promise.all(calls);
    const jobs = await fanout.getWaiting();
    const idsOf = (orgId: string) => jobs.filter((j) => j.data.orgId === orgId).map((j) => (j.data.eventIds as string[]).slice().sort());
    const expected = (orgId: string, events: { orgId: string; id: string }[]) => events.filter((e) => e.orgId === orgId).map((e) => e.id).sort();
    expect(jobs).toHaveLength(3);
    expect(idsOf(a)).toEqual(expect.arrayContaining([expected(a, first), expected(a, later.flat())]));
    expect(idsOf(b)).toEqual([expected(b, later.flat())]);
    await fanout.obliterate({ force: true });
    await fanout.close();
  });
});
