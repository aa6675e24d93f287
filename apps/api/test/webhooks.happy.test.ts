import { SecretBox } from '@gatehook/core/encryption';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { testLookup } from './lookup';

let api: TestApi;
let org: TestOrg;
let box: SecretBox;

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup, env: { SECRET_ROTATION_OVERLAP_SECONDS: '600' } });
  org = await createTestOrg(api.db);
  box = new SecretBox(api.config.GATEHOOK_ENCRYPTION_KEY);
});
afterAll(() => api.close());

const base = { name: 'SIEM', url: 'https://hooks.example.com/in/abc123XYZ', events: ['policy.created'] };

async function create(body: Record<string, unknown> = base) {
  const response = await api.call('POST', '/webhooks', { key: org.admin, body });
  expect(response.status).toBe(201);
  return response.body;
}

async function auditEvents(resourceId: string) {
  return api.db.auditEvent.findMany({ where: { orgId: org.orgId, resourceId }, orderBy: { receivedAt: 'asc' } });
}

describe('POST /webhooks', () => {
  it('creates a webhook with the contract defaults, a masked URL and a secret shown once', async () => {
    const created = await create({ ...base, vars: { TOKEN: 't0k' }, headers: { 'X-Api-Key': 'k3y' } });
    expect(created).toMatchObject({
      org_id: org.orgId,
      name: 'SIEM',
      url: 'https://hooks.example.com/…3XYZ',
      events: ['policy.created'],
      condition: '',
      destination: null,
      format: 'single',
      max_events: 1,
      template: '',
      vars: { TOKEN: '' },
      headers: { 'X-Api-Key': '' },
      status: 'active',
      disabled_reason: null,
      failing_since: null,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);

    const fetched = await api.call('GET', `/webhooks/${created.id}`, { key: org.member });
    expect(fetched.status).toBe(200);
    const { secret: _secret, ...withoutSecret } = created;
    expect(fetched.body).toEqual(withoutSecret);
    expect(fetched.text).not.toContain('whsec_');

    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: created.id } });
    expect(box.decrypt(row.urlEncrypted, { column: 'webhooks.url_encrypted', row: row.id })).toBe(base.url);
    expect(box.decrypt(row.secretEncrypted, { column: 'webhooks.secret_encrypted', row: row.id })).toBe(created.secret);
    expect(box.decryptMap(row.varsEncrypted!, { column: 'webhooks.vars_encrypted', row: row.id })).toEqual({
      TOKEN: 't0k',
    });
    expect(box.decryptMap(row.headersEncrypted!, { column: 'webhooks.headers_encrypted', row: row.id })).toEqual({
      'X-Api-Key': 'k3y',
    });

    const [event] = await auditEvents(created.id);
    expect(event).toMatchObject({ action: 'webhook.created', actorType: 'user', resourceType: 'webhook', changes: [] });
    expect(event!.payload).toEqual({ webhook_id: created.id, webhook_name: 'SIEM' });
  });

  it('accepts every optional field and a host resolving to several public addresses', async () => {
    const created = await create({
      name: 'Logs',
      url: 'https://siem.example.com:8443/bulk',
      events: ['*'],
      condition: 'event.action.startsWith("policy.")',
      destination: 'splunk',
      format: 'ndjson',
      max_events: 100,
      template: '{"event": {{ json .Payload }}}',
    });
    expect(created).toMatchObject({
      url: 'https://siem.example.com:8443/…bulk',
      destination: 'splunk',
      format: 'ndjson',
      max_events: 100,
    });
  });
});

describe('GET /webhooks', () => {
  it('lists newest first with cursor pagination and a status filter', async () => {
    const listOrg = await createTestOrg(api.db);
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const r = await api.call('POST', '/webhooks', { key: listOrg.admin, body: { ...base, name: `hook ${i}` } });
      ids.push(r.body.id);
    }
    await api.call('POST', `/webhooks/${ids[1]}/pause`, { key: listOrg.admin });

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
      const r = await api.call('GET', `/webhooks${query}`, { key: listOrg.member });
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.items.map((w: { id: string }) => w.id));
      cursor = r.body.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());

    const paused = await api.call('GET', '/webhooks?status=paused', { key: listOrg.member });
    expect(paused.body.items.map((w: { id: string }) => w.id)).toEqual([ids[1]]);
    expect(paused.body.next_cursor).toBeNull();

    const empty = await api.call('GET', '/webhooks', { key: (await createTestOrg(api.db)).admin });
    expect(empty.body).toEqual({ items: [], next_cursor: null });
  });
});

describe('PATCH /webhooks/{id}', () => {
  it('changes only the fields present and records a diff without secret values', async () => {
    const created = await create({
      ...base,
      vars: { A: 'secret-a1', B: 'secret-b1' },
      headers: { 'X-One': 'secret-h1', 'X-Two': 'secret-h2' },
    });
    const r = await api.call('PATCH', `/webhooks/${created.id}`, {
      key: org.admin,
      body: {
        name: 'Renamed',
        max_events: 10,
        format: 'array',
        vars: { A: '', C: 'secret-c1' },
        headers: { 'X-One': 'secret-h1-new' },
      },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      name: 'Renamed',
      max_events: 10,
      format: 'array',
      events: base.events,
      url: created.url,
    });
    expect(r.body.vars).toEqual({ A: '', C: '' });
    expect(r.body.headers).toEqual({ 'X-One': '' });

    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: created.id } });
    expect(box.decryptMap(row.varsEncrypted!, { column: 'webhooks.vars_encrypted', row: row.id })).toEqual({
      A: 'secret-a1',
      C: 'secret-c1',
    });
    expect(box.decryptMap(row.headersEncrypted!, { column: 'webhooks.headers_encrypted', row: row.id })).toEqual({
      'X-One': 'secret-h1-new',
    });
    expect(box.decrypt(row.urlEncrypted, { column: 'webhooks.url_encrypted', row: row.id })).toBe(base.url);

    const updated = (await auditEvents(created.id)).filter((e) => e.action === 'webhook.updated');
    expect(updated).toHaveLength(1);
    expect(updated[0]!.changes).toEqual([
      { field: 'name', old: 'SIEM', new: 'Renamed' },
      { field: 'format', old: 'single', new: 'array' },
      { field: 'max_events', old: 1, new: 10 },
      { field: 'vars', old: ['A', 'B'], new: ['A', 'C'] },
      { field: 'headers', old: ['X-One', 'X-Two'], new: ['X-One'] },
    ]);
    // Secret values are not hex, so no id in the event can contain one by chance ("c1" once matched a uuid).
    const text = JSON.stringify(updated);
    for (const secret of ['secret-a1', 'secret-b1', 'secret-c1', 'secret-h1', 'secret-h2'])
      expect(text).not.toContain(`"${secret}`);
  });

  it('keeps the URL when blank, replaces it when given, and audits masks only', async () => {
    const created = await create();
    const blank = await api.call('PATCH', `/webhooks/${created.id}`, { key: org.admin, body: { url: '' } });
    expect(blank.status).toBe(200);
    expect(blank.body.url).toBe(created.url);
    expect((await auditEvents(created.id)).filter((e) => e.action === 'webhook.updated')).toHaveLength(0);

    const moved = await api.call('PATCH', `/webhooks/${created.id}`, {
      key: org.admin,
      body: { url: 'https://siem.example.com/new/path9876' },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.url).toBe('https://siem.example.com/…9876');
    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: created.id } });
    expect(box.decrypt(row.urlEncrypted, { column: 'webhooks.url_encrypted', row: row.id })).toBe(
      'https://siem.example.com/new/path9876',
    );
    const [event] = (await auditEvents(created.id)).filter((e) => e.action === 'webhook.updated');
    expect(event!.changes).toEqual([{ field: 'url', old: created.url, new: 'https://siem.example.com/…9876' }]);
  });

  it('leaves maps alone when absent and clears them when sent empty', async () => {
    const created = await create({ ...base, vars: { A: 'a' }, headers: { 'X-A': 'x' } });
    const untouched = await api.call('PATCH', `/webhooks/${created.id}`, { key: org.admin, body: { name: 'Other' } });
    expect(untouched.body.vars).toEqual({ A: '' });
    expect(untouched.body.headers).toEqual({ 'X-A': '' });
    const cleared = await api.call('PATCH', `/webhooks/${created.id}`, {
      key: org.admin,
      body: { vars: {}, headers: {} },
    });
    expect(cleared.body.vars).toEqual({});
    expect(cleared.body.headers).toEqual({});
  });

  it('stores condition, template, events and destination changes', async () => {
    const created = await create();
    const r = await api.call('PATCH', `/webhooks/${created.id}`, {
      key: org.admin,
      body: {
        events: ['anomaly_finding.created', 'policy.created'],
        condition: 'event.payload.severity == "high"',
        template: '{}',
        destination: 'slack',
      },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      events: ['anomaly_finding.created', 'policy.created'],
      condition: 'event.payload.severity == "high"',
      template: '{}',
      destination: 'slack',
    });
    const back = await api.call('PATCH', `/webhooks/${created.id}`, { key: org.admin, body: { destination: null } });
    expect(back.body.destination).toBeNull();
  });
});

describe('DELETE /webhooks/{id}', () => {
  it('deletes and audits, after which the webhook is gone', async () => {
    const created = await create();
    const r = await api.call('DELETE', `/webhooks/${created.id}`, { key: org.admin });
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expect((await api.call('GET', `/webhooks/${created.id}`, { key: org.admin })).status).toBe(404);
    expect((await api.call('DELETE', `/webhooks/${created.id}`, { key: org.admin })).status).toBe(404);
    expect((await auditEvents(created.id)).map((e) => e.action)).toEqual(['webhook.created', 'webhook.deleted']);
  });
});

describe('POST /webhooks/{id}/rotate-secret', () => {
  it('issues a new secret and keeps the previous one valid for the overlap', async () => {
    const created = await create();
    const before = Date.now();
    const r = await api.call('POST', `/webhooks/${created.id}/rotate-secret`, { key: org.admin });
    expect(r.status).toBe(200);
    expect(r.body.secret).toMatch(/^whsec_/);
    expect(r.body.secret).not.toBe(created.secret);
    const validUntil = Date.parse(r.body.previous_valid_until);
    expect(validUntil).toBeGreaterThanOrEqual(before + 600_000 - 1000);
    expect(validUntil).toBeLessThanOrEqual(Date.now() + 600_000 + 1000);

    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: created.id } });
    expect(box.decrypt(row.secretEncrypted, { column: 'webhooks.secret_encrypted', row: row.id })).toBe(r.body.secret);
    expect(
      box.decrypt(row.previousSecretEncrypted!, { column: 'webhooks.previous_secret_encrypted', row: row.id }),
    ).toBe(created.secret);
    const events = await auditEvents(created.id);
    const rotated = events.find((e) => e.action === 'webhook.secret_rotated')!;
    expect(rotated.changes).toEqual([]);
    expect(JSON.stringify(rotated)).not.toContain(r.body.secret.slice(6, 20));
  });
});

describe('status operations', () => {
  it('disable, enable, pause and resume move the webhook between states and audit each change', async () => {
    const created = await create();
    const disable = await api.call('POST', `/webhooks/${created.id}/disable`, { key: org.admin });
    expect(disable.body).toMatchObject({ status: 'disabled', disabled_reason: 'manual' });

    // A circuit-broken webhook with a failure streak: enable clears both.
    await api.db.webhook.update({
      where: { id: created.id },
      data: { disabledReason: 'circuit_breaker', failingSince: new Date(Date.now() - 1000) },
    });
    const enable = await api.call('POST', `/webhooks/${created.id}/enable`, { key: org.admin });
    expect(enable.body).toMatchObject({ status: 'active', disabled_reason: null, failing_since: null });

    const pause = await api.call('POST', `/webhooks/${created.id}/pause`, { key: org.admin });
    expect(pause.body).toMatchObject({ status: 'paused', disabled_reason: null });

    await api.db.webhook.update({ where: { id: created.id }, data: { failingSince: new Date() } });
    const before = new Date();
    const resume = await api.call('POST', `/webhooks/${created.id}/resume`, { key: org.admin });
    expect(resume.body).toMatchObject({ status: 'active', failing_since: null });
    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.activeSince.getTime()).toBeGreaterThanOrEqual(before.getTime() - 5);

    // Repeating an operation that is already in effect changes nothing.
    const again = await api.call('POST', `/webhooks/${created.id}/resume`, { key: org.admin });
    expect(again.status).toBe(200);

    const statusChanges = (await auditEvents(created.id))
      .filter((e) => e.action === 'webhook.updated')
      .map((e) => (e.changes as { field: string; old: unknown; new: unknown }[]).find((c) => c.field === 'status'));
    expect(statusChanges).toEqual([
      { field: 'status', old: 'active', new: 'disabled' },
      { field: 'status', old: 'disabled', new: 'active' },
      { field: 'status', old: 'active', new: 'paused' },
      { field: 'status', old: 'paused', new: 'active' },
    ]);
  });
});

describe('catalogue, health and OpenAPI', () => {
  it('GET /event-types answers any valid key with the catalogue', async () => {
    const r = await api.call('GET', '/event-types', { key: org.nobody });
    expect(r.status).toBe(200);
    const finding = r.body.items.find((t: { action: string }) => t.action === 'anomaly_finding.created');
    expect(finding.payload_fields).toEqual(['severity', 'score', 'detector', 'subject']);
    expect(r.body.items.map((t: { action: string }) => t.action)).toEqual(
      expect.arrayContaining(['webhook.test', 'webhook.disabled', 'gateway.tool.error']),
    );
  });

  it('/healthz and /readyz answer without a key', async () => {
    expect((await api.call('GET', '/healthz')).body).toEqual({ status: 'ok' });
    expect((await api.call('GET', '/readyz')).body).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
  });

  it('/openapi.json documents every route from the validating schemas', async () => {
    const r = await api.call('GET', '/openapi.json');
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe('3.1.0');
    const paths = Object.keys(r.body.paths);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/webhooks',
        '/webhooks/{id}',
        '/webhooks/{id}/rotate-secret',
        '/webhooks/{id}/enable',
        '/webhooks/{id}/disable',
        '/webhooks/{id}/pause',
        '/webhooks/{id}/resume',
        '/event-types',
        '/healthz',
        '/readyz',
      ]),
    );
    const createBody = r.body.paths['/webhooks'].post.requestBody.content['application/json'].schema;
    expect(createBody.required).toEqual(['name', 'url', 'events']);
    expect(createBody.properties.max_events).toMatchObject({ minimum: 1, maximum: 100 });
    expect(createBody.additionalProperties).toBe(false);
    expect(r.body.paths['/webhooks'].get.parameters.map((p: { name: string }) => p.name)).toEqual([
      'limit',
      'cursor',
      'status',
    ]);
  });
});
