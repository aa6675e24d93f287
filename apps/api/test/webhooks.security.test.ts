import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { announceApiKeyChange } from '@gatehook/api/http/api-keys';
import { revokeApiKey } from '@gatehook/db/api-keys';
import { sqlPool } from '@gatehook/db/client';
import { TEST_DATABASE_URL } from '@gatehook/testkit/env';
import { createTestOrg, startTestApi, type TestApi, type TestOrg, type TestResponse } from '@gatehook/testkit/api';
import { testLookup } from './lookup';

let api: TestApi;
let org: TestOrg;
let other: TestOrg;
let webhookId: string;
const logLines: string[] = [];

const base = { name: 'SIEM', url: 'https://hooks.example.com/in', events: ['policy.created'] };

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup, logLines });
  org = await createTestOrg(api.db);
  other = await createTestOrg(api.db);
  webhookId = (await api.call('POST', '/webhooks', { key: org.admin, body: base })).body.id;
});
afterAll(() => api.close());

type Route = {
  method: string;
  path: (id: string) => string;
  body?: unknown;
  access: 'admin' | 'manage_webhooks' | 'key';
};
const routes: Route[] = [
  { method: 'POST', path: () => '/webhooks', body: base, access: 'admin' },
  { method: 'GET', path: () => '/webhooks', access: 'manage_webhooks' },
  { method: 'GET', path: (id) => `/webhooks/${id}`, access: 'manage_webhooks' },
  { method: 'PATCH', path: (id) => `/webhooks/${id}`, body: { name: 'x' }, access: 'admin' },
  { method: 'DELETE', path: (id) => `/webhooks/${id}`, access: 'admin' },
  { method: 'POST', path: (id) => `/webhooks/${id}/rotate-secret`, access: 'admin' },
  { method: 'POST', path: (id) => `/webhooks/${id}/enable`, access: 'admin' },
  { method: 'POST', path: (id) => `/webhooks/${id}/disable`, access: 'admin' },
  { method: 'POST', path: (id) => `/webhooks/${id}/pause`, access: 'admin' },
  { method: 'POST', path: (id) => `/webhooks/${id}/resume`, access: 'admin' },
  { method: 'GET', path: () => '/event-types', access: 'key' },
];
const label = (r: Route) => `${r.method} ${r.path('{id}')}`;

// Delivery routes: a random delivery id is enough, since the webhook is checked first.
const someDelivery = '6a0e0d7c-0000-4000-8000-0000000000d1';
const deliveryRoutes: Route[] = [
  { method: 'GET', path: (id) => `/webhooks/${id}/deliveries`, access: 'manage_webhooks' },
  { method: 'GET', path: (id) => `/webhooks/${id}/deliveries/${someDelivery}`, access: 'manage_webhooks' },
  { method: 'POST', path: (id) => `/webhooks/${id}/deliveries/${someDelivery}/retry`, access: 'manage_webhooks' },
  { method: 'POST', path: (id) => `/webhooks/${id}/test`, access: 'manage_webhooks' },
];

describe('delivery routes', () => {
  it.each(deliveryRoutes.map((r) => [label(r), r] as const))(
    '%s: 401 without a key, 403 without manage_webhooks, 404 for another organisation',
    async (_label, route) => {
      expect((await api.call(route.method, route.path(webhookId))).status).toBe(401);
      const forbidden = await api.call(route.method, route.path(webhookId), { key: org.nobody });
      expect(forbidden.status).toBe(403);
      const foreign = await api.call(route.method, route.path(webhookId), { key: other.admin });
      expect(foreign.status).toBe(404);
      expect(foreign.body.error.message).toBe('Webhook not found');
    },
  );

  it("GET /notifications needs an admin key and shows only the organisation's own", async () => {
    expect((await api.call('GET', '/notifications')).status).toBe(401);
    expect((await api.call('GET', '/notifications', { key: org.member })).status).toBe(403);
    const id = randomUUID();
    await api.db.notification.create({
      data: { id, orgId: org.orgId, kind: 'webhook_disabled', webhookId, message: 'm' },
    });
    expect(
      (await api.call('GET', '/notifications', { key: org.admin })).body.items.map((n: { id: string }) => n.id),
    ).toContain(id);
    expect((await api.call('GET', '/notifications', { key: other.admin })).body.items).toEqual([]);
  });
});

describe('401 unauthorized on every route', () => {
  const cases = routes.flatMap((route) =>
    [
      ['no Authorization header', undefined],
      ['a Basic credential', 'Basic dXNlcjpwYXNz'],
      ['a token without the ghk_ shape', 'Bearer not-a-key'],
      ['an unknown ghk_ key', `Bearer ghk_${'A'.repeat(43)}`],
    ].map(([name, header]) => [label(route), name, header, route] as const),
  );
  it.each(cases)('%s with %s', async (_label, _name, header, route) => {
    const r = await api.call(route.method, route.path(webhookId), {
      body: route.body,
      headers: header ? { authorization: header } : {},
    });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('unauthorized');
  });

  it('a revoked key stops working within a second (its cached principal is dropped on the announcement)', async () => {
    const revocable = await createTestOrg(api.db);
    expect((await api.call('GET', '/webhooks', { key: revocable.admin })).status).toBe(200);
    const row = await api.db.apiKey.findMany({ where: { orgId: revocable.orgId, role: 'admin' } });
    const revoked = await revokeApiKey(sqlPool(api.db), row[0]!.id);
    await announceApiKeyChange(api.redis, api.config.REDIS_PREFIX, [revoked!.keyHash]);
    const deadline = Date.now() + 1000;
    let r = await api.call('GET', '/webhooks', { key: revocable.admin });
    while (r.status === 200 && Date.now() < deadline) r = await api.call('GET', '/webhooks', { key: revocable.admin });
    expect(r.status).toBe(401);
    expect(r.body.error.message).toMatch(/revoked/);
  });
});

describe('403 forbidden', () => {
  it.each(routes.filter((r) => r.access === 'admin').map((r) => [label(r), r] as const))(
    '%s needs the admin role, even with every permission',
    async (_label, route) => {
      const r = await api.call(route.method, route.path(webhookId), { key: org.member, body: route.body });
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('forbidden');
    },
  );

  it.each(routes.filter((r) => r.access === 'manage_webhooks').map((r) => [label(r), r] as const))(
    '%s needs manage_webhooks',
    async (_label, route) => {
      const r = await api.call(route.method, route.path(webhookId), { key: org.nobody });
      expect(r.status).toBe(403);
      const allowed = await api.call(route.method, route.path(webhookId), {
        key: await org.key('member', ['manage_webhooks']),
      });
      expect(allowed.status).toBe(200);
    },
  );

  it('a forbidden request changes nothing', async () => {
    await api.call('DELETE', `/webhooks/${webhookId}`, { key: org.member });
    expect((await api.call('GET', `/webhooks/${webhookId}`, { key: org.admin })).status).toBe(200);
  });
});

describe("another organisation's webhook is a 404", () => {
  it.each(routes.filter((r) => r.path('x').includes('x')).map((r) => [label(r), r] as const))(
    '%s',
    async (_label, route) => {
      const r = await api.call(route.method, route.path(webhookId), { key: other.admin, body: route.body });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: { code: 'not_found', message: 'Webhook not found' } });
    },
  );

  it("lists show only the caller's organisation, and the webhook is untouched", async () => {
    const list = await api.call('GET', '/webhooks', { key: other.admin });
    expect(list.body.items.map((w: { id: string }) => w.id)).not.toContain(webhookId);
    const mine = await api.call('GET', `/webhooks/${webhookId}`, { key: org.admin });
    expect(mine.status).toBe(200);
  });
});

// URL forms the address policy refuses, through the API (packages/egress has the exhaustive unit suite).
const blockedUrls = [
  'https://127.0.0.1/h',
  'https://127.1.2.3/h',
  'https://localhost/h',
  'https://api.localhost/h',
  'https://0.0.0.0/h',
  'https://10.0.0.1/h',
  'https://172.16.5.4/h',
  'https://172.31.255.255/h',
  'https://192.168.1.1/h',
  'https://169.254.169.254/latest/meta-data',
  'https://169.254.10.10/h',
  'https://100.64.0.1/h',
  'https://100.127.255.254/h',
  'https://100.100.100.200/h',
  'https://192.0.0.8/h',
  'https://192.0.2.10/h',
  'https://198.18.0.1/h',
  'https://198.51.100.7/h',
  'https://203.0.113.9/h',
  'https://224.0.0.1/h',
  'https://240.0.0.1/h',
  'https://255.255.255.255/h',
  'https://2130706433/h',
  'https://0x7f000001/h',
  'https://0177.0.0.1/h',
  'https://0x7f.1/h',
  'https://127.1/h',
  'https://012.0.0.1/h',
  'https://[::1]/h',
  'https://[::]/h',
  'https://[::ffff:127.0.0.1]/h',
  'https://[::ffff:7f00:1]/h',
  'https://[::ffff:a9fe:a9fe]/h',
  'https://[::127.0.0.1]/h',
  'https://[64:ff9b::a9fe:a9fe]/h',
  'https://[64:ff9b:1::a00:1]/h',
  'https://[2002:7f00:1::]/h',
  'https://[2001:0::1]/h',
  'https://[2001:db8::1]/h',
  'https://[fc00::1]/h',
  'https://[fd00:ec2::254]/h',
  'https://[fe80::1]/h',
  'https://[fec0::1]/h',
  'https://[ff02::1]/h',
  'https://[100::1]/h',
  'https://metadata.google.internal/computeMetadata/v1/',
  'https://printer.local/h',
  'https://internal.example.com/h',
  'https://rebind.example.com/h',
  'https://metadata.example.com/h',
  'https://nat64.example.com/h',
  'https://cgnat.example.com/h',
  'https://mapped.example.com/h',
  'http://hooks.example.com/h',
  'ftp://hooks.example.com/h',
  'https://',
  'not a url',
];

describe('the address policy on save', () => {
  it('covers at least 40 forms', () => {
    expect(blockedUrls.length).toBeGreaterThanOrEqual(40);
  });

  it.each(blockedUrls)('rejects %s with a 422 on url that does not echo it', async (url) => {
    const r = await api.call('POST', '/webhooks', { key: org.admin, body: { ...base, url } });
    expect(r.status).toBe(422);
    expect(r.body.error.details).toEqual([{ path: 'url', message: expect.any(String) }]);
    if (url.length > 12) expect(r.text).not.toContain(url.slice(8));
  });

  it('also rejects a blocked URL on PATCH and keeps the stored one', async () => {
    const r = await api.call('PATCH', `/webhooks/${webhookId}`, {
      key: org.admin,
      body: { url: 'https://169.254.169.254/x' },
    });
    expect(r.status).toBe(422);
    expect((await api.call('GET', `/webhooks/${webhookId}`, { key: org.admin })).body.url).toBe(
      'https://hooks.example.com/…m/in',
    );
  });
});

describe('planted secrets', () => {
  const secrets = {
    urlToken: 'plantedUrlToken9f8e7d',
    urlUser: 'plantedUserInfo1a2b3c',
    header: 'plantedHeaderValue4d5e6f',
    header2: 'plantedHeaderRotated7a8b',
    varValue: 'plantedVarValue0c1d2e',
    varValue2: 'plantedVarValueNew3f4a',
    url2Token: 'plantedSecondUrl5b6c7d',
  };

  it('never appear in a response, a log line or the database in clear', async () => {
    const responses: TestResponse[] = [];
    const call = async (...args: Parameters<TestApi['call']>) => {
      const r = await api.call(...args);
      responses.push(r);
      return r;
    };
    const created = await call('POST', '/webhooks', {
      key: org.admin,
      body: {
        ...base,
        url: `https://${secrets.urlUser}:pw@hooks.example.com/in?token=${secrets.urlToken}&x=1`,
        headers: { Authorization: `Bearer ${secrets.header}` },
        vars: { ROUTING_KEY: secrets.varValue },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const signingSecrets = [created.body.secret as string];

    await call('GET', `/webhooks/${id}`, { key: org.admin });
    await call('GET', '/webhooks', { key: org.admin });
    await call('PATCH', `/webhooks/${id}`, {
      key: org.admin,
      body: {
        headers: { Authorization: `Bearer ${secrets.header2}` },
        vars: { ROUTING_KEY: '', OTHER: secrets.varValue2 },
        url: `https://hooks.example.com/v2?token=${secrets.url2Token}`,
      },
    });
    // Rejected edits that carry secrets must not echo them either.
    const rejected = await call('PATCH', `/webhooks/${id}`, {
      key: org.admin,
      body: { headers: { 'X-Bad': `${secrets.header}\r\n` }, url: `https://10.0.0.1/?token=${secrets.urlToken}` },
    });
    expect(rejected.status).toBe(422);
    const rotated = await call('POST', `/webhooks/${id}/rotate-secret`, { key: org.admin });
    signingSecrets.push(rotated.body.secret);
    await call('POST', `/webhooks/${id}/disable`, { key: org.admin });
    await call('POST', `/webhooks/${id}/enable`, { key: org.admin });
    await call('GET', `/webhooks/${id}`, { key: org.admin });

    // Responses: only the create and rotate responses may show a signing secret, each its own, once.
    const planted = Object.values(secrets);
    for (const r of responses) {
      for (const value of planted) expect(r.text).not.toContain(value);
    }
    expect(responses.filter((r) => r.text.includes(signingSecrets[0]!.slice(6)))).toEqual([created]);
    expect(responses.filter((r) => r.text.includes(signingSecrets[1]!.slice(6)))).toEqual([rotated]);

    // Logs.
    const logs = logLines.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const value of [...planted, ...signingSecrets.map((s) => s.slice(6))]) expect(logs).not.toContain(value);

    // Database: every row of every table, as text.
    const client = new Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    try {
      const tables = await client.query<{ tablename: string }>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
      );
      expect(tables.rows.map((t) => t.tablename)).toEqual(expect.arrayContaining(['webhooks', 'audit_events']));
      for (const { tablename } of tables.rows) {
        const dump = await client.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM "${tablename}" t`);
        const text = dump.rows.map((r) => r.row).join('\n');
        for (const value of [...planted, ...signingSecrets.map((s) => s.slice(6))]) {
          expect(`${tablename}: ${text.includes(value) ? value : 'clean'}`).toBe(`${tablename}: clean`);
        }
      }
    } finally {
      await client.end();
    }
  });
});
