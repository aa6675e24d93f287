import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createWorkerServer } from '@gatehook/worker/http';
import { createLogger } from '@gatehook/core/logger';
import { autovacuumState } from '@gatehook/db/partitions';
import { sqlPool } from '@gatehook/db/client';
import { sweepRetention, warnWithoutAutovacuum } from '@gatehook/worker/retention';
import type { TestReceiver } from '@gatehook/testkit/receiver';
import { auditEvent, useStack } from '@gatehook/testkit/stack';

const stack = useStack();
let receiver: TestReceiver;

beforeAll(async () => {
  receiver = await stack.receiver();
});

describe('autovacuum at start', () => {
  it('is warned about when it does not run on the tables the service churns, and only then', async () => {
    const lines: string[] = [];
    const logger = createLogger({
      name: 'test-worker',
      level: 'info',
      destination: { write: (l: string) => void lines.push(l) },
    });
    const warnings = () => lines.filter((l) => l.includes('autovacuum does not run'));
    // Turned off on one churned table: warned, naming it, whatever the server's setting.
    await stack.api.db.$executeRawUnsafe('ALTER TABLE batch_items SET (autovacuum_enabled = false)');
    try {
      expect(await warnWithoutAutovacuum(stack.api.db, logger)).toBe(true);
      expect(warnings()).toHaveLength(1);
      expect(JSON.parse(warnings()[0]!).tablesWithout).toContain('batch_items');
    } finally {
      await stack.api.db.$executeRawUnsafe('ALTER TABLE batch_items RESET (autovacuum_enabled)');
    }
    // Back on for the table: warned only if the server itself runs without it.
    const { server } = await autovacuumState(sqlPool(stack.api.db));
    expect(await warnWithoutAutovacuum(stack.api.db, logger)).toBe(!server);
    expect(warnings()).toHaveLength(server ? 1 : 2);
  });
});

describe('retention sweep', () => {
  it('deletes deliveries (with attempts) and fanned-out events older than the retention, and keeps the rest', async () => {
    const hook = await stack.webhook(receiver, { events: ['tag.created'] });
    const db = stack.api.db;
    const old = new Date(Date.now() - 31 * 86_400_000);
    const recent = new Date(Date.now() - 29 * 86_400_000);
    const make = async (createdAt: Date) => {
      const id = randomUUID();
      await db.delivery.create({
        data: {
          id,
          orgId: stack.org.orgId,
          webhookId: hook.id,
          status: 'succeeded',
          eventIds: [],
          eventCount: 1,
          createdAt,
        },
      });
      await db.deliveryAttempt.create({
        data: { deliveryId: id, webhookId: hook.id, at: createdAt, statusCode: 200, durationMs: 5 },
      });
      return id;
    };
    const [gone, kept] = [await make(old), await make(recent)];
    const oldEvent = randomUUID();
    const pendingOldEvent = randomUUID();
    await db.auditEvent.createMany({
      data: [
        {
          orgId: stack.org.orgId,
          id: oldEvent,
          action: 'tag.created',
          actorType: 'user',
          createdAt: old,
          receivedAt: old,
        },
        {
          orgId: stack.org.orgId,
          id: pendingOldEvent,
          action: 'tag.created',
          actorType: 'user',
          createdAt: old,
          receivedAt: old,
        },
      ],
    });
    // Parked (its fan-out runs kept failing), so still owed: a waiting row this old would be put back on the queue by
    // the stack's reconciler within its 500 ms interval and could be fanned out, and then rightly swept, before the
    // sweep below runs. The sweep keeps both alike: any pending_fanout row.
    await db.pendingFanout.create({
      data: { orgId: stack.org.orgId, eventId: pendingOldEvent, receivedAt: old, attempts: 5, parkedAt: old },
    });

    const swept = await sweepRetention(db, 30);
    expect(swept.deliveries).toBeGreaterThanOrEqual(1);
    expect(await db.delivery.findUnique({ where: { id: gone } })).toBeNull();
    expect(await db.deliveryAttempt.count({ where: { deliveryId: gone } })).toBe(0);
    expect(await db.delivery.findUnique({ where: { id: kept } })).not.toBeNull();
    expect(await db.auditEvent.count({ where: { orgId: stack.org.orgId, id: oldEvent } })).toBe(0);
    // An event not fanned out (waiting, or parked) is never swept: it is still owed to its webhooks.
    expect(await db.auditEvent.count({ where: { orgId: stack.org.orgId, id: pendingOldEvent } })).toBe(1);
  });

  it("keeps events by when they were received, not by the client's created_at, and those waiting in a batch buffer", async () => {
    const hook = await stack.webhook(receiver, { events: ['tag.created'], format: 'array', max_events: 10 });
    const db = stack.api.db;
    const old = new Date(Date.now() - 31 * 86_400_000);
    const [backdated, buffered] = [randomUUID(), randomUUID()];
    await db.auditEvent.createMany({
      data: [
        // A client may write any created_at: an event received just now is kept for the whole retention.
        { orgId: stack.org.orgId, id: backdated, action: 'tag.created', actorType: 'user', createdAt: old },
        // Received long ago and still waiting for its batch (no delivery holds it yet): owed, so kept.
        {
          orgId: stack.org.orgId,
          id: buffered,
          action: 'tag.created',
          actorType: 'user',
          createdAt: old,
          receivedAt: old,
        },
      ],
    });
    // Put in the buffer just now, so the reconciler does not flush it during the test (it waits linger + 10 s).
    await db.batchItem.create({ data: { webhookId: hook.id, eventId: buffered, orgId: stack.org.orgId } });

    await sweepRetention(db, 30);
    expect(await db.auditEvent.count({ where: { orgId: stack.org.orgId, id: { in: [backdated, buffered] } } })).toBe(2);
    await db.batchItem.deleteMany({ where: { webhookId: hook.id } });
  });

  it('has an index that serves the delivery list of a webhook without sorting', async () => {
    // On a small table the planner rightly prefers a scan; forbidding scans and sorts shows an index fits exactly.
    const plan = await stack.api.db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
      await tx.$executeRawUnsafe('SET LOCAL enable_sort = off');
      return tx.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(
        `EXPLAIN SELECT * FROM deliveries WHERE webhook_id = '${randomUUID()}' ORDER BY created_at DESC, id DESC LIMIT 51`,
      );
    });
    const text = plan.map((p) => p['QUERY PLAN']).join('\n');
    // deliveries is partitioned: each partition's copy of the index, merged in order (Merge Append), no Sort node.
    expect(text).toMatch(/Index Scan using deliveries_\w+_webhook_id_created_at_id_idx/);
    expect(text).not.toMatch(/^\s*(->\s+)?Sort\s+\(/m);
  });
});

describe('metrics', () => {
  it('the worker exposes delivery outcomes, attempt latency, queue depth, its room and reconciler re-enqueues', async () => {
    const hook = await stack.webhook(receiver, { events: ['policy.created'] });
    await stack.ingest([auditEvent()]);
    await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    const server = createWorkerServer({ checks: {}, metrics: stack.engine.metrics.registry });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await response.text();
      expect(text).toMatch(/^gatehook_deliveries_total\{outcome="succeeded"\} [1-9]/m);
      expect(text).toMatch(/^gatehook_attempt_duration_seconds_count\{result="2xx"\} [1-9]/m);
      expect(text).toMatch(/^gatehook_queue_jobs\{queue="deliver",state="waiting"\} \d+/m);
      expect(text).toContain('# TYPE gatehook_reconciler_reenqueued_total counter');
      // The delivery was recorded: it holds no place any more.
      expect(text).toMatch(/^gatehook_worker_deliveries_in_progress 0$/m);
      expect(text).toMatch(/^gatehook_worker_runs_waiting 0$/m);
    } finally {
      server.close();
    }
  });

  it('the API exposes request durations', async () => {
    const r = await stack.api.call('GET', '/metrics');
    expect(r.status).toBe(200);
    expect(r.text).toMatch(
      /gatehook_http_request_duration_seconds_count\{method="POST",route="\/audit-events",status="202"\} [1-9]/,
    );
  });
});
