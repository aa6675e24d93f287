import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '@gatehook/core/logger';
import { sqlPool, type Pool } from '@gatehook/db/client';
import { DeliveryQueues, tunables, waitingJobId } from '@gatehook/delivery';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import type { TestReceiver } from '@gatehook/testkit/receiver';
import { auditEvent, useStack } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';
import { reconcileOnce } from '@gatehook/worker/reconciler';
import { obliterate, queuedJobs } from '@gatehook/testkit/queues';

// Hostile input against the recovery machinery: work that keeps failing is parked and visible instead of
// retried without end, one poisoned event fails only itself, and the reconciler never stacks jobs for a delivery
// that waits on a busy origin. Short reconciler graces, so that its rounds come every half second.
jest.setTimeout(60_000);

const stack = useStack(
  { DELIVERY_ORIGIN_CONCURRENCY: '1', DELIVERY_TIMEOUT_MS: '10000' },
  { reconcilerGrace: { eventsMs: 200, deliveriesMs: 300 } },
);
let pool: Pool;

beforeAll(async () => {
  pool = sqlPool(stack.api.db);
});

/**
 * Stores an event behind the API's back, as a version without today's ingestion limits could have stored it,
 * with its pending fan-out row (attempts already made, for runs that died with their worker).
 */
async function storeEvent(payload: string, attempts = 0): Promise<string> {
  const id = randomUUID();
  await pool.query(
    `WITH e AS (
       INSERT INTO audit_events (org_id, id, action, actor_type, payload, created_at, received_at)
       VALUES ($1, $2, 'policy.created', 'user', $3::jsonb, now(), now()) RETURNING org_id, id, received_at
     ) INSERT INTO pending_fanout (org_id, event_id, received_at, attempts) SELECT org_id, id, received_at, $4 FROM e`,
    [stack.org.orgId, id, payload, attempts],
  );
  return id;
}

type PendingRow = { attempts: number; last_error: string | null; parked_at: Date | null };
async function pendingRow(eventId: string): Promise<PendingRow | undefined> {
  const { rows } = await pool.query<PendingRow>(
    'SELECT attempts, last_error, parked_at FROM pending_fanout WHERE org_id = $1 AND event_id = $2',
    [stack.org.orgId, eventId],
  );
  return rows[0];
}

async function failuresCounted(): Promise<{ failed: number; parked: number }> {
  const { values } = await stack.engine.metrics.fanoutFailures.get();
  const of = (outcome: string) => values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
  return { failed: of('failed'), parked: of('parked') };
}

const idOf = (body: string) => JSON.parse(body).data.id as string;

/** A receiver that holds every request until `release()`, then answers 200. */
async function gatedReceiver(): Promise<{ receiver: TestReceiver; release: () => void }> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const receiver = await stack.receiver(async () => {
    await gate;
    return { status: 200, body: 'ok' };
  });
  return { receiver, release };
}

describe('fan-out that keeps failing', () => {
  it(`fails on one poisoned event alone: the rest of its job goes out, and it is parked after MAX_FANOUT_ATTEMPTS (${tunables.MAX_FANOUT_ATTEMPTS}) runs, counted and visible`, async () => {
    const receiver = await stack.receiver();
    await stack.webhook(receiver, { events: ['policy.created'] });
    const before = await failuresCounted();
    // Nested deeper than the stack of JSON.stringify: no envelope can be rendered for it, whichever the webhook.
    const poisoned = await storeEvent(`{"deep": ${'['.repeat(5_000)}${']'.repeat(5_000)}}`);
    const healthy = await storeEvent('{"policy_name": "healthy"}');
    await stack.engine.queues.fanout(stack.org.orgId, [poisoned, healthy]);

    await receiver.waitFor((requests) => requests.some((r) => idOf(r.body) === healthy), 5_000);
    const parked = await until(
      () => pendingRow(poisoned),
      (row) => row?.parked_at != null,
      20_000,
    );
    expect(parked).toEqual({
      attempts: tunables.MAX_FANOUT_ATTEMPTS,
      last_error: 'RangeError: Maximum call stack size exceeded',
      parked_at: expect.any(Date),
    });
    expect(await stack.api.db.delivery.count({ where: { eventIds: { has: poisoned } } })).toBe(0);
    expect(receiver.requests.map((r) => idOf(r.body))).toEqual([healthy]);

    const after = await failuresCounted();
    expect(after.parked - before.parked).toBe(1);
    expect(after.failed - before.failed).toBeGreaterThanOrEqual(1);
    const { rows } = await pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pending_fanout WHERE parked_at IS NOT NULL',
    );
    const gauge = await stack.engine.metrics.registry.getSingleMetric('gatehook_fanout_parked_events')!.get();
    expect(gauge.values[0]?.value).toBe(rows[0]!.n);

    // Parked, it is no longer put back by the reconciler (a pass on queues of its own shows what it would queue) ...
    const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    const scratchPrefix = `test_${randomBytes(6).toString('hex')}`;
    const scratch = new DeliveryQueues(redis, scratchPrefix);
    try {
      await reconcileOnce({
        db: stack.api.db,
        queues: scratch,
        intervalMs: 500,
        batchLingerMs: 200,
        logger: createLogger({ name: 'test', level: 'silent' }),
        grace: { eventsMs: 0, deliveriesMs: 300 },
      });
      const queued = (await queuedJobs(scratch, 'fanout', ['waiting'])).flatMap((j) => j.data.eventIds as string[]);
      expect(queued).not.toContain(poisoned);
    } finally {
      for (const name of ['fanout', 'batch', 'deliver', 'task'] as const) await obliterate(scratch, name);
      await scratch.close();
      await redis.quit();
    }
    // ... while the worker goes on serving the organisation.
    const [next] = await stack.ingest([auditEvent()]);
    await receiver.waitFor((requests) => requests.some((r) => idOf(r.body) === next), 5_000);

    // Released as docs/operations.md says, it is run again.
    await pool.query(
      'UPDATE pending_fanout SET parked_at = NULL, attempts = 0, last_error = NULL WHERE org_id = $1 AND event_id = $2',
      [stack.org.orgId, poisoned],
    );
    await until(
      () => pendingRow(poisoned),
      (row) => (row?.attempts ?? 0) >= 1,
      10_000,
    );
  });

  it('parks an event whose runs never complete (each killed its worker) without running it again; one such run puts an event on its own', async () => {
    const receiver = await stack.receiver();
    await stack.webhook(receiver, { events: ['policy.created'] });
    // Two healthy events, as the rows are left when runs died with their worker: one after MAX_FANOUT_ATTEMPTS
    // such runs, one after a single run (next to an event that killed it).
    const dead = await storeEvent('{"policy_name": "dead"}', tunables.MAX_FANOUT_ATTEMPTS);
    const once = await storeEvent('{"policy_name": "once"}', 1);

    await receiver.waitFor((requests) => requests.some((r) => idOf(r.body) === once), 10_000);
    const parked = await until(
      () => pendingRow(dead),
      (row) => row?.parked_at != null,
      10_000,
    );
    expect(parked).toEqual({ attempts: tunables.MAX_FANOUT_ATTEMPTS, last_error: null, parked_at: expect.any(Date) });
    await stack.settle([once]);
    expect(await stack.api.db.delivery.count({ where: { eventIds: { has: dead } } })).toBe(0);
    expect(receiver.requests.map((r) => idOf(r.body))).toEqual([once]);
  });
});

describe('a delivery waiting on a busy origin', () => {
  it('has one job, however many reconciler rounds see it overdue', async () => {
    // The origin's one slot (DELIVERY_ORIGIN_CONCURRENCY 1) is held by the first request until it is released.
    const { receiver: slow, release } = await gatedReceiver();
    const hook = await stack.webhook(slow, { events: ['policy.created'] });
    const first = await stack.ingest([auditEvent()]);
    await slow.waitFor((requests) => requests.length === 1, 5_000);
    const events = [...first, ...(await stack.ingest([auditEvent(), auditEvent()]))];
    const deliveries = (await stack.deliveries(hook.id, (items) => items.length === 3)).map((d) => d.id);

    // The two others wait for the slot, are turned away and come back, again and again, each time recorded due
    // again; between leases (a turn that finds the webhook still full costs no database work) a reconciler round
    // may see them overdue. Watch every job naming them while four rounds pass.
    const seen = new Map<string, Set<string>>(deliveries.map((id) => [id, new Set<string>()]));
    const metric = async (
      read: () => Promise<{ values: { labels: Record<string, unknown>; value: number }[] }>,
      labels: Record<string, string>,
    ) => (await read()).values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value ?? 0;
    const reenqueued = () => metric(() => stack.engine.metrics.reenqueued.get(), { kind: 'deliveries' });
    const rounds = () => metric(() => stack.engine.metrics.periodicRuns.get(), { job: 'reconcile', outcome: 'ok' });
    const watch = async () => {
      const jobs = await queuedJobs(stack.engine.queues, 'deliver', ['active', 'waiting', 'prioritized', 'delayed']);
      for (const job of jobs) for (const id of job.data.deliveryIds as string[]) seen.get(id)?.add(job.id!);
    };
    // Both turned away once (each now has its waiting job), then four rounds.
    await until(
      async () => (await watch(), [...seen.values()].filter((jobIds) => jobIds.size > 0).length),
      (n) => n >= 2,
      15_000,
    );
    const [start, startRounds] = [await reenqueued(), await rounds()];
    await until(
      async () => (await watch(), rounds()),
      (count) => count - startRounds >= 4,
      15_000,
    );
    try {
      // Waiting under their live jobs, they were not lost: not put back, not counted.
      expect((await reenqueued()) - start).toBe(0);
      for (const [id, jobIds] of seen) expect([...jobIds].filter((j) => j !== waitingJobId(id))).toEqual([]);
      expect([...seen.values()].filter((jobIds) => jobIds.size === 1)).toHaveLength(2);
    } finally {
      release();
    }
    await stack.settle(events);
    const final = await stack.deliveries(hook.id, (items) => items.every((d) => d.status === 'succeeded'));
    expect(final.map((d) => d.attempt_count)).toEqual([1, 1, 1]);
    expect(slow.requests).toHaveLength(3);
  });
});

describe('an attempt in flight', () => {
  it.each([
    ['pause', 'resume'],
    ['disable', 'enable'],
  ])(
    'keeps its lease through %s, %s and a manual retry: the delivery is sent once, and the answer in flight is its outcome',
    async (stop, start) => {
      const { receiver, release } = await gatedReceiver();
      const hook = await stack.webhook(receiver, { events: ['policy.created'] });
      const call = (path: string) => stack.api.call('POST', `/webhooks/${hook.id}${path}`, { key: stack.org.admin });
      const events = await stack.ingest([auditEvent()]);
      await receiver.waitFor((requests) => requests.length === 1, 5_000);

      expect((await call(`/${stop}`)).status).toBe(200);
      const [cancelled] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
      expect((await call(`/${start}`)).status).toBe(200);
      const retried = await call(`/deliveries/${cancelled!.id}/retry`);
      expect(retried.status).toBe(202);
      expect(retried.body.status).toBe('pending');

      // The retry's job ran and found the delivery still leased by the attempt in flight: nothing more was sent.
      const lease = await stack.api.db.delivery.findUniqueOrThrow({
        where: { id: cancelled!.id },
        select: { leasedUntil: true },
      });
      expect(lease.leasedUntil!.getTime()).toBeGreaterThan(Date.now());
      await until(
        async () =>
          (await queuedJobs(stack.engine.queues, 'deliver', ['active', 'waiting', 'prioritized', 'delayed'])).filter(
            (j) => (j.data.deliveryIds as string[]).includes(cancelled!.id),
          ).length,
        (n) => n === 0,
        5_000,
      );
      expect(receiver.requests).toHaveLength(1);

      release();
      await stack.settle(events);
      const [done] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
      expect(done!.attempt_count).toBe(1);
      expect(receiver.requests).toHaveLength(1);
    },
  );
});
