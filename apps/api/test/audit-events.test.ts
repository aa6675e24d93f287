import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { ingestAuditEvents } from '@gatehook/delivery/ingest';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { auditEvent } from '@gatehook/testkit/stack';

let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.db);
});
afterAll(() => api.close());

const ingest = (body: unknown, key = org.admin) => api.call('POST', '/audit-events', { key, body });

describe('POST /audit-events', () => {
  it('accepts one event, stores it as the audit log does and answers 202 with its id', async () => {
    const r = await ingest(
      auditEvent({
        resources: { mcp_slug: 'github' },
        context: { ip: '10.1.2.3', trace_id: 't-1' },
        changes: [{ field: 'x', old: 1, new: 2 }],
      }),
    );
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ accepted: 1, ids: [expect.stringMatching(/^[0-9a-f-]{36}$/)] });
    const row = await api.db.auditEvent.findFirstOrThrow({ where: { orgId: org.orgId, id: r.body.ids[0] } });
    expect(row).toMatchObject({
      action: 'policy.created',
      actorType: 'user',
      actorDisplayName: 'Ada',
      resources: { mcp_slug: 'github' },
      context: { ip: '10.1.2.3', trace_id: 't-1' },
      changes: [{ field: 'x', old: 1, new: 2 }],
    });
    expect(Math.abs(row.createdAt.getTime() - Date.now())).toBeLessThan(10_000);
  });

  it('accepts up to 1000 events, keeping given ids and created_at, in request order', async () => {
    const given = randomUUID();
    const events = Array.from({ length: 1000 }, (_, i) =>
      auditEvent(i === 0 ? { id: given, created_at: '2026-01-02T03:04:05.678+01:00' } : {}),
    );
    const r = await ingest({ events });
    expect(r.status).toBe(202);
    expect(r.body.accepted).toBe(1000);
    expect(r.body.ids[0]).toBe(given);
    expect(new Set(r.body.ids).size).toBe(1000);
    const row = await api.db.auditEvent.findFirstOrThrow({ where: { orgId: org.orgId, id: given } });
    expect(row.createdAt.toISOString()).toBe('2026-01-02T02:04:05.678Z');
  });

  it('is idempotent on id: the same event twice is stored once', async () => {
    const id = randomUUID();
    expect((await ingest(auditEvent({ id }))).status).toBe(202);
    const again = await ingest({ events: [auditEvent({ id, actor_display_name: 'changed' }), auditEvent({ id })] });
    expect(again.body).toEqual({ accepted: 2, ids: [id, id] });
    const rows = await api.db.auditEvent.findMany({ where: { orgId: org.orgId, id } });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.actorDisplayName).toBe('Ada');
  });

  it('is idempotent on an id it generated, once a client sends it back after the fan-out', async () => {
    const first = await ingest(auditEvent());
    const [id] = first.body.ids as string[];
    // Fanned out: the pending claim that turns away a second copy while the first waits is gone.
    await api.db.pendingFanout.deleteMany({ where: { orgId: org.orgId, eventId: id! } });
    const again = await ingest(auditEvent({ id, actor_display_name: 'changed' }));
    expect(again.body).toEqual({ accepted: 1, ids: [id] });
    const rows = await api.db.auditEvent.findMany({ where: { orgId: org.orgId, id: id! } });
    expect(rows.map((r) => r.actorDisplayName)).toEqual(['Ada']);
    expect(await api.db.pendingFanout.count({ where: { orgId: org.orgId, eventId: id! } })).toBe(0);
  });

  it.each([
    ['action missing', { ...auditEvent(), action: undefined }, 'action'],
    ['action not dotted', auditEvent({ action: 'PolicyCreated' }), 'action'],
    ['webhook.test', auditEvent({ action: 'webhook.test' }), 'action'],
    ['a Gatehook action', auditEvent({ action: 'webhook.disabled' }), 'action'],
    ['rate_limit.exceeded', auditEvent({ action: 'rate_limit.exceeded' }), 'action'],
    ['unknown actor_type', auditEvent({ actor_type: 'robot' }), 'actor_type'],
    ['id not a uuid', auditEvent({ id: 'evt_1' }), 'id'],
    ['created_at not a date', auditEvent({ created_at: 'yesterday' }), 'created_at'],
    ['resources with a non-string value', auditEvent({ resources: { a: 1 } }), 'resources.a'],
    ['payload not an object', auditEvent({ payload: [1, 2] }), 'payload'],
    ['an unknown field', auditEvent({ severity: 'high' }), 'severity'],
    ['another organisation', auditEvent({ org_id: randomUUID() }), 'org_id'],
  ])('rejects %s with a 422 naming the field', async (_name, event, path) => {
    const r = await ingest(event);
    expect(r.status).toBe(422);
    expect(r.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('names the event at fault in a batch, and stores nothing of a rejected batch', async () => {
    const good = randomUUID();
    const r = await ingest({ events: [auditEvent({ id: good }), auditEvent({ actor_type: 'robot' })] });
    expect(r.status).toBe(422);
    expect(r.body.error.details).toEqual([{ path: 'events.1.actor_type', message: expect.any(String) }]);
    expect(await api.db.auditEvent.count({ where: { orgId: org.orgId, id: good } })).toBe(0);
  });

  it.each([
    ['an empty batch', { events: [] }],
    ['1001 events', { events: Array.from({ length: 1001 }, () => auditEvent()) }],
    ['events beside other fields', { events: [auditEvent()], extra: 1 }],
  ])('rejects %s', async (_name, body) => {
    const r = await ingest(body);
    expect(r.status).toBe(422);
    expect(r.body.error.details[0].path).toBe('events');
  });

  it('takes bodies up to 5 MB and refuses larger ones with 413', async () => {
    const big = 'x'.repeat(4_000);
    const ok = await ingest({ events: Array.from({ length: 1000 }, () => auditEvent({ payload: { note: big } })) });
    expect(ok.status).toBe(202);
    const tooBig = await ingest({
      events: Array.from({ length: 1000 }, () => auditEvent({ payload: { note: `${big}${big}` } })),
    });
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe('payload_too_large');
  });

  it('answers the same on the path served before Express and on the route (a query string, a trailing slash)', async () => {
    for (const path of ['/audit-events', '/audit-events?source=gateway', '/audit-events/']) {
      const call = (body: unknown, key: string | null = org.admin) =>
        api.call('POST', path, { ...(key === null ? {} : { key }), body });
      const one = await call(auditEvent());
      expect([path, one.status, one.body.accepted]).toEqual([path, 202, 1]);
      const two = await call({ events: [auditEvent(), auditEvent()] });
      expect([path, two.status, two.body.accepted]).toEqual([path, 202, 2]);
      expect(
        await api.db.auditEvent.count({ where: { orgId: org.orgId, id: { in: [...one.body.ids, ...two.body.ids] } } }),
      ).toBe(3);
      const errors = [
        [await call({ events: [auditEvent({ actor_type: 'robot' })] }), 422, 'validation_error', 'events.0.actor_type'],
        [await call({ events: [] }), 422, 'validation_error', 'events'],
        [await call('{"action":'), 400, 'bad_request', undefined],
        [await call('[1]'), 400, 'bad_request', undefined],
        [await call(auditEvent(), null), 401, 'unauthorized', undefined],
        [await call(auditEvent(), org.nobody), 403, 'forbidden', undefined],
        [await call('x'.repeat(5 * 1024 * 1024 + 1)), 413, 'payload_too_large', undefined],
      ] as const;
      for (const [response, status, code, field] of errors) {
        expect([path, response.status, response.body.error?.code, response.body.error?.details?.[0]?.path]).toEqual([
          path,
          status,
          code,
          field,
        ]);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      }
    }
  });

  it('takes a compressed body or another charset on the exact URL through the regular route', async () => {
    const post = (body: Buffer, headers: Record<string, string>) =>
      fetch(`${api.baseUrl}/audit-events`, {
        method: 'POST',
        body,
        headers: { authorization: `Bearer ${org.admin}`, ...headers },
      });
    const json = JSON.stringify(auditEvent());
    const gzipped = await post(gzipSync(json), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(gzipped.status).toBe(202);
    const utf16 = await post(Buffer.from(json, 'utf16le'), { 'content-type': 'application/json; charset=utf-16le' });
    expect(utf16.status).toBe(202);
    const ids = [
      ...((await gzipped.json()) as { ids: string[] }).ids,
      ...((await utf16.json()) as { ids: string[] }).ids,
    ];
    expect(await api.db.auditEvent.count({ where: { orgId: org.orgId, id: { in: ids } } })).toBe(2);
  });

  it('counts ingestion in the request duration histogram, on the path before Express too', async () => {
    const token = 'metrics-token-of-this-test-0123';
    const own = await startTestApi({ env: { METRICS_TOKEN: token } });
    try {
      expect((await own.call('POST', '/audit-events', { key: org.admin, body: auditEvent() })).status).toBe(202);
      expect((await own.call('POST', '/audit-events', { key: org.admin, body: { events: [] } })).status).toBe(422);
      const metrics = await own.call('GET', '/metrics', { headers: { authorization: `Bearer ${token}` } });
      expect(metrics.text).toMatch(
        /gatehook_http_request_duration_seconds_count\{method="POST",route="\/audit-events",status="202"\} 1\b/,
      );
      expect(metrics.text).toMatch(
        /gatehook_http_request_duration_seconds_count\{method="POST",route="\/audit-events",status="422"\} 1\b/,
      );
    } finally {
      await own.close();
    }
  });

  it('needs ingest_events', async () => {
    expect((await ingest(auditEvent(), org.nobody)).status).toBe(403);
    expect((await ingest(auditEvent(), await org.key('member', ['ingest_events']))).status).toBe(202);
    expect((await api.call('POST', '/audit-events', { body: auditEvent() })).status).toBe(401);
  });
});

describe('ingestAuditEvents (library entry point)', () => {
  it('commits events without a queue, for an in-process gateway (the reconciler fans them out: see the chaos suite)', async () => {
    const result = await ingestAuditEvents({ db: api.db }, org.orgId, [auditEvent() as never, auditEvent() as never]);
    expect(result.accepted).toBe(2);
    expect(await api.db.auditEvent.count({ where: { orgId: org.orgId, id: { in: result.ids } } })).toBe(2);
    // Committed with their fan-out rows: the reconciler will hand them to fan-out.
    expect(await api.db.pendingFanout.count({ where: { orgId: org.orgId, eventId: { in: result.ids } } })).toBe(2);
  });

  it('answers 503 when Postgres is unreachable, having recorded nothing', async () => {
    const down = await startTestApi({ env: { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/gatehook' } });
    try {
      // Authentication needs the database too, so the whole request is unavailable rather than unauthorised.
      const r = await down.call('POST', '/audit-events', { key: org.admin, body: auditEvent() });
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('unavailable');
    } finally {
      await down.close();
    }
  });
});
