import { randomBytes, randomUUID } from 'node:crypto';
import { UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createLogger } from '@gatehook/core/logger';
import { createDb, type Db } from '@gatehook/db/client';
import { DeliveryQueues, queuePrefix, shardOf, tunables, waitingJobId } from '@gatehook/delivery';
import { createTestDatabase } from '@gatehook/testkit/database';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { until } from '@gatehook/testkit/until';
import { OverdueSweep, reconcileOnce, SharedOverdueSweep, type ReconcilerDeps } from '@gatehook/worker/reconciler';
import { obliterate, queuedJobs } from '@gatehook/testkit/queues';

// The reconciler on a database of its own (a pass scans all of it) and a queue prefix that no worker takes jobs
// from: what its rounds leave on the queues is exactly what a worker would get.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let db: Db;
let redis: Redis;
let queues: DeliveryQueues;
let deps: ReconcilerDeps;
const prefix = `test_${randomBytes(6).toString('hex')}`;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
  redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  queues = new DeliveryQueues(redis, prefix);
  // No grace: everything committed counts as lost at once.
  deps = {
    db,
    queues,
    intervalMs: 1,
    batchLingerMs: 200,
    logger: createLogger({ name: 'test', level: 'silent' }),
    grace: { eventsMs: 0, deliveriesMs: 0 },
    sweep: new OverdueSweep(),
  };
  // The client's first query loads Prisma's query compiler: seconds on a busy machine, paid here once.
  await reconcileOnce(deps);
});
afterAll(async () => {
  for (const name of ['fanout', 'batch', 'deliver', 'task'] as const) await obliterate(queues, name);
  await queues.close();
  await redis.quit();
  await db.$disconnect();
  await database.drop();
});

async function webhookRow(): Promise<{ orgId: string; webhookId: string }> {
  const orgId = randomUUID();
  const webhookId = randomUUID();
  await db.organization.create({ data: { id: orgId, name: 'reconciler' } });
  await db.webhook.create({
    data: {
      id: webhookId,
      orgId,
      name: 'w',
      urlEncrypted: 'x',
      urlMask: 'https://example.com/…hook',
      events: ['*'],
      varNames: [],
      headerNames: [],
      secretEncrypted: 'x',
      activeSince: new Date(),
    },
  });
  return { orgId, webhookId };
}

/** Distinct ids of the deliver jobs that name a delivery, whatever their state. */
async function deliverJobsOf(deliveryId: string): Promise<string[]> {
  const jobs = await queuedJobs(queues, 'deliver', ['active', 'waiting', 'prioritized', 'delayed', 'failed']);
  return [...new Set(jobs.filter((j) => (j.data.deliveryIds as string[]).includes(deliveryId)).map((j) => j.id!))];
}

describe('deliveries put back by the reconciler', () => {
  it('leave one job per delivery waiting on a busy origin, however many rounds see it overdue, and count only the lost one', async () => {
    const { orgId, webhookId } = await webhookRow();
    // Turned away by a full origin and bounced since without a lease, a delivery looks overdue to every round.
    const [waiting, lost] = [randomUUID(), randomUUID()];
    const overdue = new Date(Date.now() - 60_000);
    await db.delivery.createMany({
      data: [waiting, lost].map((id) => ({
        id,
        orgId,
        webhookId,
        status: 'pending' as const,
        eventIds: [],
        eventCount: 1,
        nextRetryAt: overdue,
      })),
    });
    // Its next turn waits in the delayed set, as the engine left it; the other one's job was lost with Redis.
    await queues.deliverLater([{ id: waiting, dueAt: new Date(Date.now() + 60_000) }], orgId);

    const counted: number[] = [];
    for (let round = 0; round < 4; round++) counted.push((await reconcileOnce(deps)).deliveries);
    // The waiting one has its job alive: not put back, not counted; the lost one once, then it has its job.
    expect(counted).toEqual([1, 0, 0, 0]);
    expect(await deliverJobsOf(waiting)).toEqual([waitingJobId(waiting)]);
    expect(await deliverJobsOf(lost)).toEqual([waitingJobId(lost)]);
  });

  it('put a delivery back again once its copy failed for good, which is not kept to block the next one', async () => {
    const { orgId, webhookId } = await webhookRow();
    const id = randomUUID();
    await db.delivery.create({
      data: {
        id,
        orgId,
        webhookId,
        status: 'retrying',
        eventIds: [],
        eventCount: 1,
        nextRetryAt: new Date(Date.now() - 60_000),
      },
    });
    await reconcileOnce(deps);
    expect(await deliverJobsOf(id)).toEqual([waitingJobId(id)]);

    // The copy fails for good (as after its last attempt while Postgres was down), and leaves nothing behind.
    const connection = redis.duplicate();
    const worker = new Worker(
      'deliver',
      async () => {
        throw new UnrecoverableError('database down');
      },
      { connection, prefix: queuePrefix(prefix, 'deliver', shardOf(id, queues.shards)) },
    );
    await until(
      () => deliverJobsOf(id),
      (ids) => ids.length === 0,
      10_000,
    );
    await worker.close();
    await connection.quit();

    await reconcileOnce(deps);
    expect(await deliverJobsOf(id)).toEqual([waitingJobId(id)]);
  });

  it("find another organisation's lost delivery behind one organisation's 5,000 older overdue ones", async () => {
    const big = await webhookRow();
    const small = await webhookRow();
    const old = Date.now() - 3_600_000;
    const waiting = Array.from({ length: 5_000 }, () => randomUUID());
    await db.delivery.createMany({
      data: waiting.map((id, i) => ({
        id,
        orgId: big.orgId,
        webhookId: big.webhookId,
        status: 'pending' as const,
        eventIds: [],
        eventCount: 1,
        nextRetryAt: new Date(old + i),
      })),
    });
    // The big organisation's deliveries all wait under their jobs (a backlog bouncing off a full webhook) ...
    await queues.deliverLater(waiting.map((id) => ({ id, dueAt: new Date(Date.now() + 600_000), orgId: big.orgId })));
    // ... and the small one's, overdue for less long, was lost with Redis.
    const lost = randomUUID();
    await db.delivery.create({
      data: {
        id: lost,
        orgId: small.orgId,
        webhookId: small.webhookId,
        status: 'retrying',
        eventIds: [],
        eventCount: 1,
        nextRetryAt: new Date(Date.now() - 60_000),
      },
    });

    // Two workers take the passes in turn; the sweep's place is shared through Redis.
    const workers = [0, 1].map(() => ({ ...deps, sweep: new SharedOverdueSweep(redis, prefix) }));
    const counted: number[] = [];
    for (let round = 0; round < 3 && (await deliverJobsOf(lost)).length === 0; round++)
      counted.push((await reconcileOnce(workers[round % 2]!)).deliveries);
    expect(await deliverJobsOf(lost)).toEqual([waitingJobId(lost)]);
    // Only what was put back is counted: the lost one, never the 5,000 waiting ones.
    expect(counted.reduce((a, b) => a + b, 0)).toBe(1);
    await db.delivery.deleteMany({ where: { orgId: big.orgId } });
  });
});

describe('events put back by the reconciler', () => {
  it('go in chunks when fresh, one per job once a run on them did not complete, and never when parked', async () => {
    const { orgId } = await webhookRow();
    const at = (s: number) => new Date(Date.now() - 60_000 + s * 1000);
    const [fresh1, fresh2, suspect, parked] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const events = [fresh1, suspect, fresh2, parked];
    await db.auditEvent.createMany({
      data: events.map((id, i) => ({
        orgId,
        id,
        action: 'policy.created',
        actorType: 'user',
        createdAt: at(i),
        receivedAt: at(i),
      })),
    });
    await db.pendingFanout.createMany({
      data: [
        { orgId, eventId: fresh1, receivedAt: at(0) },
        // A run that died with its worker (or failed on it) counted one attempt.
        { orgId, eventId: suspect, receivedAt: at(1), attempts: 1 },
        { orgId, eventId: fresh2, receivedAt: at(2) },
        {
          orgId,
          eventId: parked,
          receivedAt: at(3),
          attempts: tunables.MAX_FANOUT_ATTEMPTS,
          parkedAt: new Date(),
          lastError: 'RangeError: x',
        },
      ],
    });

    for (let round = 0; round < 3; round++) await reconcileOnce(deps);
    const jobs = (await queuedJobs(queues, 'fanout', ['waiting', 'prioritized', 'delayed', 'active'])).filter(
      (j) => j.data.orgId === orgId,
    );
    expect(jobs.map((j) => j.data).sort((a, b) => b.eventIds.length - a.eventIds.length)).toEqual([
      { orgId, eventIds: [fresh1, fresh2], recovered: true },
      { orgId, eventIds: [suspect], recovered: true },
    ]);
  });
});
