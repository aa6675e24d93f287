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
});
