import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { sqlPool } from '@gatehook/db/client';
import { commitFanout } from '@gatehook/db/delivery/create';
import { insertAuditEvents, type OutboxEvent } from '@gatehook/db/outbox';
import { auditEvent, useStack } from '@gatehook/testkit/stack';

const stack = useStack({ BATCH_LINGER_MS: '400' });

const ids = (n: number, seed: string) =>
  Array.from({ length: n }, (_, i) => `0193a4f0-${seed}-7000-8000-${String(i).padStart(12, '0')}`);

describe('batching (SPEC 6.5)', () => {
  it('array: packs up to max_events per request, ordered by event id', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { format: 'array', max_events: 5, events: ['tag.created'] });
    const eventIds = ids(12, '0001');
    // Ingested in reverse order: the array is still ordered by event id.
    await stack.ingest(
      [...eventIds].reverse().map((id) => auditEvent({ id, action: 'tag.created', payload: { tag_name: id } })),
    );
    await r.waitFor((reqs) => reqs.reduce((n, q) => n + JSON.parse(q.body).length, 0) === 12);

    const bodies = r.requests.map((q) => JSON.parse(q.body) as { data: { id: string } }[]);
    expect(bodies.map((b) => b.length).sort()).toEqual([2, 5, 5]);
    for (const body of bodies) {
      const bodyIds = body.map((e) => e.data.id);
      expect(bodyIds).toEqual([...bodyIds].sort());
    }
    expect(
      bodies
        .flat()
        .map((e) => e.data.id)
        .sort(),
    ).toEqual(eventIds);
    for (const q of r.requests) {
      expect(q.headers['content-type']).toBe('application/json');
      expect(new StandardWebhook(hook.secret).verify(q.body, q.headers as Record<string, string>)).toBeTruthy();
    }
    const deliveries = await stack.deliveries(
      hook.id,
      (items) => items.length === 3 && items.every((d) => d.status === 'succeeded'),
    );
    expect(deliveries.map((d) => d.event_count).sort()).toEqual([2, 5, 5]);
  });

  it('ndjson: one envelope per line, application/x-ndjson', async () => {
    const r = await stack.receiver();
    await stack.webhook(r, { format: 'ndjson', max_events: 100, events: ['policy.updated'] });
    await stack.ingest(ids(7, '0002').map((id) => auditEvent({ id, action: 'policy.updated' })));
    await r.waitFor((reqs) => reqs.length >= 1);
    expect(r.requests).toHaveLength(1);
    const q = r.requests[0]!;
    expect(q.headers['content-type']).toBe('application/x-ndjson');
    const lines = q.body.split('\n').filter((l) => l.length > 0);
    expect(lines).toHaveLength(7);
    expect(lines.map((l) => JSON.parse(l).type)).toEqual(Array(7).fill('policy.updated'));
  });

  it('a partial batch goes out after the linger', async () => {
    const r = await stack.receiver();
    await stack.webhook(r, { format: 'array', max_events: 50, events: ['policy.deleted'] });
    const started = Date.now();
    await stack.ingest([auditEvent({ action: 'policy.deleted' })]);
    await r.waitFor((reqs) => reqs.length === 1);
    expect(r.requests[0]!.at - started).toBeGreaterThanOrEqual(350);
    expect(JSON.parse(r.requests[0]!.body)).toHaveLength(1);
  });

  it('single sends one request per event whatever max_events says', async () => {
    const r = await stack.receiver();
    await stack.webhook(r, { format: 'single', max_events: 10, events: ['policy.created'] });
    await stack.ingest([auditEvent(), auditEvent(), auditEvent()]);
    await r.waitFor((reqs) => reqs.length === 3);
    for (const q of r.requests) expect(JSON.parse(q.body).type).toBe('policy.created');
  });

  it('splits a batch so that no body exceeds 1 MB, and fails an event that alone exceeds it', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { format: 'array', max_events: 10, events: ['anomaly_finding.escalated'] });
    const big = 'x'.repeat(300_000);
    const eventIds = ids(6, '0003');
    const huge = '0193a4f0-0003-7000-8000-999999999999';
    await stack.ingest([
      ...eventIds.map((id) => auditEvent({ id, action: 'anomaly_finding.escalated', payload: { subject: big } })),
      auditEvent({ id: huge, action: 'anomaly_finding.escalated', payload: { subject: 'y'.repeat(1_100_000) } }),
    ]);
    await r.waitFor((reqs) => reqs.reduce((n, q) => n + JSON.parse(q.body).length, 0) === 6);
    for (const q of r.requests) expect(Buffer.byteLength(q.body)).toBeLessThanOrEqual(1_048_576);
    expect(r.requests.length).toBeGreaterThanOrEqual(2);

    const deliveries = await stack.deliveries(hook.id, (items) => items.some((d) => d.status === 'failed'));
    const failed = deliveries.find((d) => d.status === 'failed')!;
    expect(failed).toMatchObject({ event_count: 1, attempt_count: 0, retryable: false });
    const detail = await stack.api.call('GET', `/webhooks/${hook.id}/deliveries/${failed.id}`, {
      key: stack.org.admin,
    });
    expect(detail.body.event_ids).toEqual([huge]);
    expect(detail.body.error).toMatch(/^payload_too_large/);
    const retry = await stack.api.call('POST', `/webhooks/${hook.id}/deliveries/${failed.id}/retry`, {
      key: stack.org.admin,
    });
    expect(retry.status).toBe(409);
  });

  it('a paused webhook drops its batch buffer', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { format: 'array', max_events: 50, events: ['policy.created'] });
    const ids = await stack.ingest([auditEvent(), auditEvent()]);
    await stack.api.call('POST', `/webhooks/${hook.id}/pause`, { key: stack.org.admin });
    await stack.settle(ids);
    expect(r.requests).toHaveLength(0);
    expect(await stack.api.db.batchItem.count({ where: { webhookId: hook.id } })).toBe(0);
  });
});

describe('full batches formed at fan-out', () => {
  it('sends the full batches of a large fan-out at once; only the rest waits in the buffer', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { format: 'ndjson', max_events: 10, events: ['gateway.tool.denied'] });
    const eventIds = ids(23, '0011');
    await stack.ingest(eventIds.map((id) => auditEvent({ id, action: 'gateway.tool.denied' })));
    await r.waitFor((reqs) => reqs.length === 3);
    expect(r.requests.map((q) => q.body.split('\n').filter((l) => l.length > 0).length).sort()).toEqual([10, 10, 3]);
    await stack.settle(eventIds);
    expect(
      r.requests.flatMap((q) => [...q.body.matchAll(/"id":"(0193a4f0-0011-[^"]+)"/g)].map((m) => m[1])).sort(),
    ).toEqual(eventIds);
    const deliveries = await stack.deliveries(hook.id, (items) => items.length === 3);
    expect(deliveries.map((d) => d.event_count).sort((a, b) => a - b)).toEqual([3, 10, 10]);
  });

  const stored = (id: string, orgId: string, at: Date): OutboxEvent => ({
    receivedAt: at,
    data: {
      id,
      org_id: orgId,
      action: 'gateway.tool.error',
      actor_type: 'agent',
      actor_id: 'a',
      actor_display_name: 'A',
      resource_type: 'tool',
      resource_id: 't',
      resource_display_name: 'T',
      resources: {},
      context: {},
      changes: [],
      payload: {},
      created_at: at.toISOString(),
    },
  });

  it('puts the events it claimed of a batch whose other events a racing fan-out claimed into the buffer, losing none', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { format: 'array', max_events: 4, events: ['gateway.tool.error'] });
    const pool = sqlPool(stack.api.db);
    const orgId = stack.org.orgId;
    const [a, b, c, d] = ids(4, '0012') as [string, string, string, string];
    const now = new Date();
    // Four events committed (pending fan-out), without a fan-out job: this test plays two racing fan-outs itself.
    await insertAuditEvents(
      pool,
      [a, b, c, d].map((id) => stored(id, orgId, now)),
    );
    // A racing call claims a and b (creating nothing); then a call that prepared one batch of all four commits.
    expect(
      (await commitFanout(pool, { orgId, eventIds: [a, b], now, deliveries: [], batchItems: [] })).claimed.sort(),
    ).toEqual([a, b]);
    const batch = {
      id: randomUUID(),
      webhookId: hook.id,
      eventIds: [a, b, c, d],
      status: 'pending' as const,
      bodyEncrypted: 'x',
      contentType: 'application/json',
      secretsVersion: null,
      error: null,
      nextRetryAt: now,
    };
    const committed = await commitFanout(pool, {
      orgId,
      eventIds: [a, b, c, d],
      now,
      deliveries: [batch],
      batchItems: [],
    });
    expect(committed.claimed.sort()).toEqual([c, d]);
    expect(committed.deliveries).toEqual([]);
    expect(committed.buffered).toEqual([hook.id]);
    const buffered = await stack.api.db.batchItem.findMany({
      where: { webhookId: hook.id },
      orderBy: { eventId: 'asc' },
    });
    expect(buffered.map((i) => i.eventId)).toEqual([c, d]);
    // Whole, the same batch is created as one delivery of four events.
    const [e, f, g, h] = ids(4, '0013') as [string, string, string, string];
    await insertAuditEvents(
      pool,
      [e, f, g, h].map((id) => stored(id, orgId, now)),
    );
    const whole = await commitFanout(pool, {
      orgId,
      eventIds: [e, f, g, h],
      now,
      deliveries: [{ ...batch, id: randomUUID(), eventIds: [e, f, g, h] }],
      batchItems: [],
    });
    expect(whole.deliveries).toHaveLength(1);
    expect(whole.buffered).toEqual([]);
    const row = await stack.api.db.delivery.findUniqueOrThrow({ where: { id: whole.deliveries[0]! } });
    expect([row.eventCount, [...row.eventIds].sort()]).toEqual([4, [e, f, g, h]]);
    await stack.api.db.delivery.delete({ where: { id: row.id } });
    await stack.api.db.batchItem.deleteMany({ where: { webhookId: hook.id } });
  });
});
