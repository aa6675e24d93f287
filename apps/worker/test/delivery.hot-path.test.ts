import { sqlPool } from '@gatehook/db/client';
import { tunables } from '@gatehook/delivery';
import { createTestOrg } from '@gatehook/testkit/api';
import { auditEvent, startStack, useStack } from '@gatehook/testkit/stack';
import { waitFor } from '@gatehook/testkit/until';
import { insertAuditEvents } from '@gatehook/db/outbox';
import { outboxEvent, uuidv7 } from '@gatehook/testkit/audit-events';

const stack = useStack();

const until = <T>(probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000) =>
  waitFor(probe, { timeoutMs, everyMs: 10 });

describe("the service's own events", () => {
  it('a webhook.created event reaches a * webhook within a second, and not the webhook it records', async () => {
    const watcher = await stack.receiver();
    await stack.webhook(watcher, { events: ['*'] });
    const other = await stack.receiver();
    const created = Date.now();
    const hook = await stack.webhook(other, { events: ['*'] });
    const request = await until(() =>
      watcher.requests.find(
        (r) => JSON.parse(r.body).type === 'webhook.created' && JSON.parse(r.body).data.resource_id === hook.id,
      ),
    );
    expect(request.at - created).toBeLessThan(1000);
    // The new webhook became active at the instant of its creation event: it does not receive it.
    await stack.ingest([auditEvent()]);
    await until(() => (other.requests.length > 0 ? true : undefined));
    expect(other.requests.map((r) => JSON.parse(r.body).type)).toEqual(['policy.created']);
  });
});

describe('an organisation without webhooks', () => {
  it('has its events claimed by fan-out (so the reconciler leaves them alone), with no delivery', async () => {
    const lonely = await createTestOrg(stack.api.db);
    const r = await stack.api.call('POST', '/audit-events', {
      key: lonely.admin,
      body: { events: [auditEvent(), auditEvent()] },
    });
    expect(r.status).toBe(202);
    const ids = r.body.ids as string[];
    await until(async () => {
      const pending = await stack.api.db.pendingFanout.count({ where: { orgId: lonely.orgId, eventId: { in: ids } } });
      return pending === 0 ? true : undefined;
    });
    expect(await stack.api.db.delivery.count({ where: { orgId: lonely.orgId } })).toBe(0);
  });
});

describe('cached webhook configuration', () => {
  it('an edited URL is used for the next event at once (pub/sub invalidation)', async () => {
    const before = await stack.receiver();
    const after = await stack.receiver();
    const hook = await stack.webhook(before, { events: ['policy.created'] });
    await stack.ingest([auditEvent()]);
    await until(() => (before.requests.length === 1 ? true : undefined));
    const patched = await stack.api.call('PATCH', `/webhooks/${hook.id}`, {
      key: stack.org.admin,
      body: { url: after.url('/hook') },
    });
    expect(patched.status).toBe(200);
    await stack.ingest([auditEvent()]);
    await until(() => (after.requests.length === 1 ? true : undefined));
    expect(before.requests).toHaveLength(1);
  });
});

describe('exclusive attempts', () => {
  it('a delivery is never in flight twice, however many jobs name it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = await stack.receiver(async () => {
      await gate;
      return { status: 200, body: 'ok' };
    });
    const hook = await stack.webhook(slow, { events: ['policy.created'] });
    await stack.ingest([auditEvent()]);
    await until(() => (slow.requests.length === 1 ? true : undefined));
    const { rows } = await sqlPool(stack.api.db).query<{ id: string }>(
      'SELECT id FROM deliveries WHERE webhook_id = $1',
      [hook.id],
    );
    const id = rows[0]!.id;
    // Duplicated jobs (a reconciler pass, a stalled job re-run) while the attempt is in flight.
    await stack.engine.queues.deliverNow(
      Array.from({ length: 20 }, () => id),
      stack.org.orgId,
    );
    for (let i = 0; i < 10; i++) await stack.engine.queues.deliverNow([id], stack.org.orgId);
    await until(async () =>
      (await stack.engine.queues.counts('deliver', 'wait', 'active')).wait === 0 ? true : undefined,
    );
    release();
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    await until(async () =>
      (await stack.engine.queues.counts('deliver', 'wait', 'active', 'delayed')).active === 0 ? true : undefined,
    );
    expect(slow.requests).toHaveLength(1);
    expect(delivery!.attempt_count).toBe(1);
  });
});

describe("a worker's room", () => {
  it('a burst larger than the worker can send waits unleased: leases stay within DELIVERY_CONCURRENCY + one chunk', async () => {
    // A stack of its own: the deliveries this leaves waiting must not reach the other tests' receivers' counts.
    const own = await startStack({ DELIVERY_CONCURRENCY: '5', DELIVERY_ORIGIN_CONCURRENCY: '5' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    try {
      const held = await own.receiver(async () => {
        await gate;
        return { status: 200, body: 'ok' };
      });
      const hook = await own.webhook(held, { events: ['policy.created'] });
      const room = 5 + tunables.DELIVER_CHUNK;
      // Three jobs of 200 (more than one fan-out runs itself): the first is let in, the next waits for room.
      await own.ingest(Array.from({ length: 3 * tunables.DELIVER_CHUNK }, () => auditEvent()));
      const gauge = async (name: string) =>
        (await own.engine.metrics.registry.getSingleMetric(name)!.get()).values[0]?.value ?? 0;
      // Once the first job's lease has committed and the next job waits for room. (Within the 2 s slot deadline:
      // after it, deliveries turned away give their places back before their run releases their leases.)
      const leased = await until(async () => {
        if ((await gauge('gatehook_worker_runs_waiting')) < 1) return undefined;
        const { rows } = await sqlPool(own.api.db).query<{ n: number }>(
          'SELECT count(*)::int AS n FROM deliveries WHERE webhook_id = $1 AND leased_until > now()',
          [hook.id],
        );
        return rows[0]!.n > 0 ? rows[0]!.n : undefined;
      });
      expect(leased).toBeLessThanOrEqual(room);
      expect(await gauge('gatehook_worker_deliveries_in_progress')).toBeLessThanOrEqual(room);
      expect(held.requests.length).toBeLessThanOrEqual(5);
    } finally {
      release();
      await own.close();
    }
  });
});

describe('a burst turned away by a webhook that was slow to answer', () => {
  it('deliveries recalled while their run still held its requests go back at once, not at the time estimated when they were turned away', async () => {
    // A stack of its own: the held requests must not outlast the 2 s slot wait at the stack's 2 s timeout.
    const own = await startStack({ DELIVERY_TIMEOUT_MS: '10000' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    try {
      // The first two requests (the starting limit) are held; every later one is answered at once.
      const receiver = await own.receiver(async (_request, index) => {
        if (index < 2) await gate;
        return { status: 200, body: 'ok' };
      });
      const hook = await own.webhook(receiver, { events: ['policy.created'] });
      const queued: { id: string; dueAt: Date }[][] = [];
      const deliverLater = own.engine.queues.deliverLater.bind(own.engine.queues);
      own.engine.queues.deliverLater = async (deliveries, orgId) => {
        queued.push(deliveries.map(({ id, dueAt }) => ({ id, dueAt })));
        return deliverLater(deliveries, orgId);
      };
      const ids = await own.ingest(Array.from({ length: 10 }, () => auditEvent()));
      // One fan-out runs all ten itself: two go, eight wait for a slot and are turned away at the 2 s slot wait,
      // while the two still hold theirs (their run, and the release of its leases, waits for them).
      const gauge = async () =>
        (await own.engine.metrics.registry.getSingleMetric('gatehook_worker_deliveries_in_progress')!.get()).values[0]
          ?.value ?? 0;
      await until(async () => (receiver.requests.length === 2 && (await gauge()) === 2 ? true : undefined), 15_000);
      // The two answer: the webhook has room, and the oldest of those it turned away are recalled before their run
      // has queued their waiting jobs. Those must go back now; the rest at the estimate (the two held 2 s each).
      const released = Date.now();
      release();
      const busy = await until(() => queued.find((batch) => batch.length === 8), 15_000);
      const atOnce = busy.filter((b) => b.dueAt.getTime() - released < 1000);
      expect(atOnce).toHaveLength(2);
      expect(busy.filter((b) => b.dueAt.getTime() - released > 2000)).toHaveLength(6);
      // Their answers make room again, and the rest are recalled from the delayed set: all ten arrive.
      await own.settle(ids);
      await own.deliveries(hook.id, (items) => items.length === 10 && items.every((d) => d.status === 'succeeded'));
    } finally {
      release();
      await own.close();
    }
  });
});

/**
 * An organisation of its own (nothing of the other tests' is pending for it) with one webhook of policy.created on a
 * fresh receiver, once no fan-out is pending or in flight (the webhook's own webhook.created event has one).
 */
async function quietOrgWithWebhook() {
  const org = await createTestOrg(stack.api.db);
  const receiver = await stack.receiver();
  const created = await stack.api.call('POST', '/webhooks', {
    key: org.admin,
    body: { name: 'rounds', url: receiver.url('/hook'), events: ['policy.created'] },
  });
  expect(created.status).toBe(201);
  await until(async () => {
    const pending = await stack.api.db.pendingFanout.count({ where: { orgId: org.orgId } });
    const counts = await stack.engine.queues.counts('fanout', 'wait', 'active');
    return pending === 0 && counts.wait === 0 && counts.active === 0 ? true : undefined;
  });
  return { org, receiver, hook: { id: created.body.id as string } };
}

/**
 * Waits until every one of `jobs` fan-out jobs is taken and `rounds` fan-outs wait for a row the test holds (their
 * commit's key check); the other jobs then wait for those rounds, not for Postgres.
 */
async function roundsWaitingForTheRow(jobs: number, rounds: number): Promise<void> {
  await until(async () => {
    const counts = await stack.engine.queues.counts('fanout', 'wait', 'active');
    return counts.wait === 0 && counts.active === jobs ? true : undefined;
  });
  await until(async () => {
    const { rows } = await sqlPool(stack.api.db).query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%DELETE FROM pending_fanout%'`,
    );
    return rows[0]!.n >= rounds ? true : undefined;
  });
}

describe('fan-out rounds', () => {
  it('small fan-out jobs of an organisation that queue up behind its running rounds go in one round, each event delivered once', async () => {
    const { org, receiver, hook } = await quietOrgWithWebhook();
    const pool = sqlPool(stack.api.db);
    // Rounds of an organisation in flight at once: one per render thread.
    const inFlight = stack.config.RENDER_THREADS;
    const at = new Date();
    const events = Array.from({ length: inFlight + 10 }, () => outboxEvent(org.orgId, uuidv7(), at, 'policy.created'));
    const ids = events.map((e) => e.data.id);
    // Stored as ingestion stores them, without the API's fan-out job: the test enqueues one job per event below.
    await insertAuditEvents(pool, events);
    // Holding the webhook's row keeps every fan-out of it from committing (its deliveries' key check waits).
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM webhooks WHERE id = $1 FOR UPDATE', [hook.id]);
      await stack.engine.queues.fanout(org.orgId, ids, { chunk: 1 });
      await roundsWaitingForTheRow(ids.length, inFlight);
      const released = Date.now();
      await holder.query('COMMIT');
      await until(() => (receiver.requests.length >= ids.length ? true : undefined));
      // created_at: the instant its fan-out round started (this process's clock). The rounds that waited for the row
      // started before it was let go; the ten jobs behind them went in one round, started after. Without rounds,
      // every job would have started its own fan-out at once, all before.
      const { rows } = await pool.query<{ event_ids: string[]; created_at: Date }>(
        'SELECT event_ids, created_at FROM deliveries WHERE webhook_id = $1',
        [hook.id],
      );
      expect(rows.flatMap((r) => r.event_ids).sort()).toEqual([...ids].sort());
      const after = rows.filter((r) => r.created_at.getTime() >= released);
      expect(after).toHaveLength(10);
      expect(new Set(after.map((r) => r.created_at.getTime())).size).toBe(1);
      expect(receiver.requests.map((r) => JSON.parse(r.body).data.id).sort()).toEqual([...ids].sort());
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  });
});

describe('a fan-out round that fails', () => {
  it("runs each of its jobs again alone: a poisoned event fails only its own job, the other jobs' events go out at once", async () => {
    const { org, receiver, hook } = await quietOrgWithWebhook();
    const pool = sqlPool(stack.api.db);
    const store = async (payload: string) => {
      const id = uuidv7();
      await pool.query(
        `WITH e AS (
           INSERT INTO audit_events (org_id, id, action, actor_type, payload, created_at, received_at)
           VALUES ($1, $2, 'policy.created', 'user', $3::jsonb, now(), now()) RETURNING org_id, id, received_at
         ) INSERT INTO pending_fanout (org_id, event_id, received_at) SELECT org_id, id, received_at FROM e`,
        [org.orgId, id, payload],
      );
      return id;
    };
    const inFlight = stack.config.RENDER_THREADS;
    const healthy: string[] = [];
    for (let i = 0; i < inFlight + 9; i++) healthy.push(await store('{"policy_name": "healthy"}'));
    // Nested deeper than the stack of JSON.stringify: no envelope can be rendered for it.
    const poisoned = await store(`{"deep": ${'['.repeat(5_000)}${']'.repeat(5_000)}}`);
    const failures = async () =>
      (await stack.engine.metrics.fanoutFailures.get()).values.reduce((n, v) => n + v.value, 0);
    const before = await failures();
    const holder = await pool.connect();
    try {
      // As in "fan-out rounds": the first rounds wait for the webhook's row, the other ten jobs (the poisoned one
      // last) wait for them and then go as one round, which fails on the poisoned event.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM webhooks WHERE id = $1 FOR UPDATE', [hook.id]);
      await stack.engine.queues.fanout(org.orgId, [...healthy, poisoned], { chunk: 1 });
      await roundsWaitingForTheRow(healthy.length + 1, inFlight);
      await holder.query('COMMIT');
      await until(() => (receiver.requests.length >= healthy.length ? true : undefined));
      expect(receiver.requests.map((r) => JSON.parse(r.body).data.id).sort()).toEqual([...healthy].sort());
      // One failure, the poisoned job's own run; no other job's event was counted or left pending.
      const { rows } = await pool.query<{ event_id: string; attempts: number; last_error: string | null }>(
        'SELECT event_id, attempts, last_error FROM pending_fanout WHERE org_id = $1',
        [org.orgId],
      );
      expect(rows).toEqual([
        { event_id: poisoned, attempts: 1, last_error: 'RangeError: Maximum call stack size exceeded' },
      ]);
      expect((await failures()) - before).toBe(1);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  });
});
