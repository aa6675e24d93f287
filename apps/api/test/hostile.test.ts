// Hostile input at the API: each case asserts the answer (a 4xx in the contract's shape, never a
// stall or a 5xx) and that /healthz keeps answering within a second while the request is processed. The API runs
// in this process, so a blocked event loop shows up directly as a slow /healthz.

import { randomUUID } from 'node:crypto';
import { SecretBox } from '@gatehook/core/encryption';
import { MAX_INLINE_ATTEMPTS } from '@gatehook/api/services/deliveries';
import { MAX_INGEST_NODES } from '@gatehook/delivery/audit-event-input';
import { secretsVersionOf } from '@gatehook/delivery/render/secrets-version';
import { sealBody } from '@gatehook/delivery/render/stored-body';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { auditEvent } from '@gatehook/testkit/stack';
import { testLookup } from './lookup';

let api: TestApi;
let org: TestOrg;

const METRICS_TOKEN = 'hostile-metrics-token-0123';
const SECRET = 'sk_live_hostile_var_value';
const base = { name: 'hostile', url: 'https://hooks.example.com/in', events: ['policy.created'] };

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup, env: { METRICS_TOKEN } });
  org = await createTestOrg(api.db);
});
afterAll(() => api.close());

/** Runs `work` while polling /healthz; returns work's result and the slowest /healthz answer. */
async function whileHealthz<T>(work: () => Promise<T>): Promise<{ result: T; slowestMs: number; polls: number }> {
  let done = false;
  let slowestMs = 0;
  let polls = 0;
  const poller = (async () => {
    while (!done) {
      const started = performance.now();
      const r = await fetch(`${api.baseUrl}/healthz`);
      await r.arrayBuffer();
      slowestMs = Math.max(slowestMs, performance.now() - started);
      polls++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  try {
    const result = await work();
    return { result, slowestMs, polls };
  } finally {
    done = true;
    await poller;
  }
}

describe('ingestion bodies', () => {
  it(`refuses 5 MB of tiny values (more than ${MAX_INGEST_NODES} JSON values) with a 413, /healthz answering within 1 s`, async () => {
    expect(MAX_INGEST_NODES).toBe(500_000);
    const tiny = new Array(2_400_000).fill('0').join(',');
    const body = JSON.stringify({ events: [auditEvent({ payload: '__PAYLOAD__' })] }).replace(
      '"__PAYLOAD__"',
      `{"v":[${tiny}]}`,
    );
    expect(body.length).toBeLessThan(5 * 1024 * 1024);
    const started = performance.now();
    const { result, slowestMs, polls } = await whileHealthz(() =>
      api.call('POST', '/audit-events', { key: org.admin, body, headers: { 'content-type': 'application/json' } }),
    );
    expect(result.status).toBe(413);
    expect(result.body).toEqual({
      error: {
        code: 'payload_too_large',
        message: expect.any(String),
        details: [{ path: 'events.0.payload.v', message: expect.stringMatching(/more than 500000 values/) }],
      },
    });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(polls).toBeGreaterThan(0);
    expect(slowestMs).toBeLessThan(1000);
  });

  it('accepts a large body well under the value cap (the exact boundary is unit-tested in core)', async () => {
    const body = { events: [auditEvent({ payload: { v: new Array(50_000).fill(1) } })] };
    const r = await api.call('POST', '/audit-events', { key: org.admin, body });
    expect(r.status).toBe(202);
  });

  it('keeps a normal 100-event request fast', async () => {
    const events = Array.from({ length: 100 }, (_, i) =>
      auditEvent({ payload: { n: i, tags: ['a', 'b'] }, context: { ip: '203.0.113.1' } }),
    );
    const started = performance.now();
    const r = await api.call('POST', '/audit-events', { key: org.admin, body: { events } });
    expect(r.status).toBe(202);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('names the event and field of an unstorable string in one walk', async () => {
    const r = await api.call('POST', '/audit-events', {
      key: org.admin,
      body: { events: [auditEvent(), auditEvent({ payload: { x: ['ok', 'a\u0000b'] } })] },
    });
    expect(r.status).toBe(422);
    expect(r.body.error.details).toEqual([{ path: 'events.1.payload.x.1', message: expect.stringMatching(/NUL/) }]);
  });
});

describe('webhook save with a hostile template or condition', () => {
  it.each([
    [
      'urlquery over a doubling string',
      '{{$s := .Vars.pad}}{{range 30}}{{$s = printf "%s%s" $s $s}}{{$x := urlquery $s}}{{end}}{}',
    ],
    ['printf with a huge width', '{"a": "{{printf "%999999d" 1}}"}'],
    ['hundreds of wide verbs', `{"a": "{{printf "${'%9999d'.repeat(300)}"${' 1'.repeat(300)}}}"}`],
    ['a range that never ends', '{{range 1000000000}}{{end}}{}'],
  ])('%s: 422 at template, /healthz within 1 s', async (_name, template) => {
    const { result, slowestMs } = await whileHealthz(() =>
      api.call('POST', '/webhooks', { key: org.admin, body: { ...base, template, vars: { pad: '<é& "'.repeat(40) } } }),
    );
    expect(result.status).toBe(422);
    expect(result.body.error.details).toEqual([{ path: 'template', message: expect.any(String) }]);
    expect(slowestMs).toBeLessThan(1000);
  });

  it('a variable value never comes back in a template error (PATCH with a blank value)', async () => {
    const created = await api.call('POST', '/webhooks', {
      key: org.admin,
      body: { ...base, template: '{"a": "{{.Vars.token}}"}', vars: { token: SECRET } },
    });
    expect(created.status).toBe(201);
    const r = await api.call('PATCH', `/webhooks/${created.body.id}`, {
      key: org.admin,
      body: { template: '{"a": {{.Vars.token}}}', vars: { token: '' } },
    });
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).not.toContain('sk_live');
  });

  it.each([
    [
      'concatenation inside map',
      'event.changes.map(c, event.actor.name + event.actor.name).exists(x, x.contains("#"))',
    ],
    ['concatenation inside exists', 'event.changes.exists(c, (string(c) + event.action).size() > 3)'],
  ])('%s: 422 at condition', async (_name, condition) => {
    const r = await api.call('POST', '/webhooks', { key: org.admin, body: { ...base, condition } });
    expect(r.status).toBe(422);
    expect(r.body.error.details).toEqual([{ path: 'condition', message: expect.stringMatching(/concatenation/) }]);
  });
});

describe('request view of a delivery built to make redaction slow', () => {
  it('answers with every value redacted, /healthz within 1 s, for values of line breaks and the largest values and body', async () => {
    // A value of line breaks between two characters (each may be printed raw, escaped or dropped by ndjson packing),
    // and 49 more variables and 50 header values of the largest size.
    const breaks = `x${'\n'.repeat(40)}y`;
    const big = (i: number) => `${i}-`.padEnd(4096, 'abcdefghijklmnopqrstuvwxyz'[i % 26]!);
    const vars: Record<string, string> = { breaks };
    for (let i = 0; i < 49; i++) vars[`v${i}`] = big(i);
    const headers: Record<string, string> = {};
    for (let i = 0; i < 50; i++) headers[`X-H${i}`] = big(100 + i);
    const created = await api.call('POST', '/webhooks', { key: org.admin, body: { ...base, vars, headers } });
    expect(created.status).toBe(201);
    const webhook = await api.db.webhook.findUniqueOrThrow({ where: { id: created.body.id } });
    // A body of 400 KB that prints every value, and near misses of the line-break value that never match.
    const nearMiss = `x${'\n'.repeat(39)}z`;
    const events: Record<string, string>[] = [
      { breaks, nearMiss },
      ...Object.values(vars)
        .slice(1)
        .map((v) => ({ v })),
      ...Object.values(headers).map((h) => ({ h })),
      { filler: `x${'\\n'.repeat(50_000)}`.slice(0, 100_000) },
    ];
    const body = JSON.stringify(events);
    expect(body.length).toBeGreaterThan(400_000);
    const id = randomUUID();
    await api.db.delivery.create({
      data: {
        id,
        orgId: org.orgId,
        webhookId: webhook.id,
        status: 'succeeded',
        eventIds: [randomUUID()],
        eventCount: 1,
        bodyEncrypted: sealBody(new SecretBox(api.config.GATEHOOK_ENCRYPTION_KEY), body, id, webhook),
        contentType: 'application/json',
        secretsVersion: secretsVersionOf(webhook),
        attemptCount: 1,
      },
    });
    await api.db.deliveryAttempt.create({
      data: { deliveryId: id, webhookId: webhook.id, at: new Date(), statusCode: 200, durationMs: 5 },
    });

    const { result, slowestMs, polls } = await whileHealthz(() =>
      api.call('GET', `/webhooks/${webhook.id}/deliveries/${id}/request`, { key: org.admin }),
    );
    expect(result.status).toBe(200);
    const shown = JSON.parse(result.body.body) as Record<string, string>[];
    expect(shown[0]!.breaks).toBe('[redacted]');
    expect(shown[0]!.nearMiss).toBe(nearMiss);
    expect(shown.slice(1, 100).every((e) => Object.values(e)[0] === '[redacted]')).toBe(true);
    for (const value of [...Object.values(vars), ...Object.values(headers)])
      expect(result.text).not.toContain(JSON.stringify(value).slice(1, -1));
    expect(polls).toBeGreaterThan(0);
    expect(slowestMs).toBeLessThan(1000);
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  it('answers 401 without the bearer token and 200 with it', async () => {
    const refused = await api.call('GET', '/metrics');
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthorized');
    const ok = await api.call('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('gatehook_http_request_duration_seconds');
  });
});

describe('attempts of a receiver that answered 429 a thousand times', () => {
  it(`shows the latest MAX_INLINE_ATTEMPTS (${MAX_INLINE_ATTEMPTS}) inline and pages the rest`, async () => {
    expect(MAX_INLINE_ATTEMPTS).toBe(50);
    const webhook = await api.call('POST', '/webhooks', { key: org.admin, body: base });
    const deliveryId = randomUUID();
    const total = 130;
    await api.db.delivery.create({
      data: {
        id: deliveryId,
        orgId: org.orgId,
        webhookId: webhook.body.id,
        status: 'pending',
        eventIds: [],
        eventCount: 1,
        attemptCount: total,
      },
    });
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    await api.db.deliveryAttempt.createMany({
      data: Array.from({ length: total }, (_, i) => ({
        deliveryId,
        webhookId: webhook.body.id,
        at: new Date(t0 + i * 1000),
        statusCode: 429,
        error: `http_429`,
        durationMs: i,
        responseSnippet: `n${i}`,
      })),
    });
    const path = `/webhooks/${webhook.body.id}/deliveries/${deliveryId}`;

    const detail = await api.call('GET', path, { key: org.admin });
    expect(detail.status).toBe(200);
    expect(detail.body.attempt_count).toBe(total);
    expect(detail.body.attempts).toHaveLength(MAX_INLINE_ATTEMPTS);
    // The latest ones, oldest first.
    expect(detail.body.attempts[0].response_snippet).toBe(`n${total - MAX_INLINE_ATTEMPTS}`);
    expect(detail.body.attempts.at(-1).response_snippet).toBe(`n${total - 1}`);
    expect(detail.body.attempts_cursor).toEqual(expect.any(String));

    const list = await api.call('GET', `/webhooks/${webhook.body.id}/deliveries`, { key: org.admin });
    expect(list.body.items[0].attempts).toHaveLength(MAX_INLINE_ATTEMPTS);

    const older: string[] = [];
    let cursor: string | null = detail.body.attempts_cursor;
    while (cursor !== null) {
      const pageOf: { status: number; body: { items: { response_snippet: string }[]; next_cursor: string | null } } =
        await api.call('GET', `${path}/attempts?limit=30&cursor=${cursor}`, { key: org.admin });
      expect(pageOf.status).toBe(200);
      expect(pageOf.body.items.length).toBeLessThanOrEqual(30);
      older.push(...pageOf.body.items.map((a) => a.response_snippet));
      cursor = pageOf.body.next_cursor;
    }
    expect(older).toEqual(
      Array.from({ length: total - MAX_INLINE_ATTEMPTS }, (_, i) => `n${total - MAX_INLINE_ATTEMPTS - 1 - i}`),
    );

    const first = await api.call('GET', `${path}/attempts`, { key: org.admin });
    expect(first.body.items).toHaveLength(50);
    expect(first.body.items[0].response_snippet).toBe(`n${total - 1}`);
    expect((await api.call('GET', `${path}/attempts?cursor=nonsense`, { key: org.admin })).status).toBe(400);
    expect(
      (await api.call('GET', `/webhooks/${webhook.body.id}/deliveries/${randomUUID()}/attempts`, { key: org.admin }))
        .status,
    ).toBe(404);
  });

  it('a delivery with few attempts shows them all and no cursor', async () => {
    const webhook = await api.call('POST', '/webhooks', { key: org.admin, body: base });
    const deliveryId = randomUUID();
    await api.db.delivery.create({
      data: {
        id: deliveryId,
        orgId: org.orgId,
        webhookId: webhook.body.id,
        status: 'failed',
        eventIds: [],
        eventCount: 1,
        attemptCount: 2,
      },
    });
    await api.db.deliveryAttempt.createMany({
      data: [0, 1].map((i) => ({
        deliveryId,
        webhookId: webhook.body.id,
        at: new Date(),
        statusCode: 500,
        error: 'http_500',
        durationMs: 1,
      })),
    });
    const detail = await api.call('GET', `/webhooks/${webhook.body.id}/deliveries/${deliveryId}`, { key: org.admin });
    expect(detail.body.attempts).toHaveLength(2);
    expect(detail.body.attempts_cursor).toBeNull();
  });
});
