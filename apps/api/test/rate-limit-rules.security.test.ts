import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';

let api: TestApi;
let org: TestOrg;
let other: TestOrg;
let ruleId: string;
let rule: Record<string, unknown>;

const base = { name: 'Tool calls', scope: { type: 'mcp_tool_call' }, key_by: ['org'], limit: 10, window_seconds: 60 };

beforeAll(async () => {
  api = await startTestApi({ queues: false });
  org = await createTestOrg(api.db);
  other = await createTestOrg(api.db);
  const created = await api.call('POST', '/rate-limits/rules', { key: org.admin, body: base });
  expect(created.status).toBe(201);
  ruleId = created.body.id;
  rule = created.body;
});
afterAll(() => api.close());

type Route = {
  method: string;
  path: (id: string) => string;
  body?: unknown;
  needs: 'view_rate_limits' | 'manage_rate_limits';
  success: number;
};
// PATCH and DELETE come last in their group so that a successful call does not remove the rule the others use.
const routes: Route[] = [
  { method: 'GET', path: () => '/rate-limits/rules', needs: 'view_rate_limits', success: 200 },
  { method: 'GET', path: (id) => `/rate-limits/rules/${id}`, needs: 'view_rate_limits', success: 200 },
  { method: 'POST', path: () => '/rate-limits/rules', body: base, needs: 'manage_rate_limits', success: 201 },
  {
    method: 'PATCH',
    path: (id) => `/rate-limits/rules/${id}`,
    body: { name: 'Renamed' },
    needs: 'manage_rate_limits',
    success: 200,
  },
  { method: 'DELETE', path: (id) => `/rate-limits/rules/${id}`, needs: 'manage_rate_limits', success: 204 },
];
const label = (r: Route) => `${r.method} ${r.path('{rule_id}')}`;
const byId = routes.filter((r) => r.path('x').includes('x'));

async function unchanged(): Promise<void> {
  const current = await api.call('GET', `/rate-limits/rules/${ruleId}`, { key: org.admin });
  expect(current.status).toBe(200);
  expect(current.body).toEqual(rule);
}

describe('401 unauthorized', () => {
  const cases = routes.flatMap((route) =>
    [
      ['no Authorization header', undefined],
      ['a token without the ghk_ shape', 'Bearer not-a-key'],
      ['an unknown ghk_ key', `Bearer ghk_${'A'.repeat(43)}`],
    ].map(([name, header]) => [label(route), name, header, route] as const),
  );
  it.each(cases)('%s with %s', async (_label, _name, header, route) => {
    const r = await api.call(route.method, route.path(ruleId), {
      body: route.body,
      headers: header ? { authorization: header } : {},
    });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('unauthorized');
    expect(r.text).not.toContain('Tool calls');
  });

  it('an unauthenticated PATCH or DELETE changes nothing', async () => {
    await unchanged();
  });
});

describe('403 forbidden', () => {
  it.each(routes.map((r) => [label(r), r] as const))(
    '%s: a key with only check_rate_limits is refused',
    async (_label, route) => {
      const r = await api.call(route.method, route.path(ruleId), {
        key: await org.key('member', ['check_rate_limits']),
        body: route.body,
      });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({
        error: { code: 'forbidden', message: `This operation needs the ${route.needs} permission` },
      });
    },
  );

  it.each(routes.map((r) => [label(r), r] as const))(
    '%s: a key with no permission is refused',
    async (_label, route) => {
      const r = await api.call(route.method, route.path(ruleId), { key: org.nobody, body: route.body });
      expect(r.status).toBe(403);
    },
  );

  it('view_rate_limits may list and get but not create, patch or delete', async () => {
    const viewer = await org.key('member', ['view_rate_limits']);
    const list = await api.call('GET', '/rate-limits/rules', { key: viewer });
    expect(list.status).toBe(200);
    expect(list.body.items.map((r: { id: string }) => r.id)).toContain(ruleId);
    expect((await api.call('GET', `/rate-limits/rules/${ruleId}`, { key: viewer })).body).toEqual(rule);
    for (const route of routes.filter((r) => r.needs === 'manage_rate_limits')) {
      const r = await api.call(route.method, route.path(ruleId), { key: viewer, body: route.body });
      expect(r.status).toBe(403);
    }
    await unchanged();
    expect(await api.db.rateLimitRule.count({ where: { orgId: org.orgId } })).toBe(1);
  });

  it('manage_rate_limits does not imply view_rate_limits', async () => {
    const manager = await org.key('member', ['manage_rate_limits']);
    expect((await api.call('GET', '/rate-limits/rules', { key: manager })).status).toBe(403);
    expect((await api.call('GET', `/rate-limits/rules/${ruleId}`, { key: manager })).status).toBe(403);
  });

  it('a key holding webhook and ingestion permissions has no access to rules', async () => {
    const key = await org.key('member', ['manage_webhooks', 'ingest_events']);
    for (const route of routes)
      expect((await api.call(route.method, route.path(ruleId), { key, body: route.body })).status).toBe(403);
    await unchanged();
  });
});

describe("another organisation's rule", () => {
  it.each(byId.map((r) => [label(r), r] as const))('%s is a 404 like a missing rule', async (_label, route) => {
    const r = await api.call(route.method, route.path(ruleId), { key: other.admin, body: route.body });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: { code: 'not_found', message: 'Rate limit rule not found' } });
  });

  it('is absent from its list, and survives the attempts untouched', async () => {
    const created = await api.call('POST', '/rate-limits/rules', {
      key: other.admin,
      body: { ...base, name: 'Theirs' },
    });
    expect(created.status).toBe(201);
    const theirs = await api.call('GET', '/rate-limits/rules', { key: other.admin });
    expect(theirs.body.items.map((r: { id: string }) => r.id)).toEqual([created.body.id]);
    const mine = await api.call('GET', '/rate-limits/rules', { key: org.admin });
    expect(mine.body.items.map((r: { id: string }) => r.id)).toEqual([ruleId]);
    await unchanged();
    expect(await api.db.auditEvent.count({ where: { orgId: other.orgId, resourceId: ruleId } })).toBe(0);
  });

  it("a cursor cannot reach another organisation's rules", async () => {
    const page = await api.call('GET', '/rate-limits/rules?limit=1', { key: other.admin });
    expect(page.status).toBe(200);
    const cursor = Buffer.from(
      JSON.stringify({ c: '1970-01-01T00:00:00.000Z', i: '00000000-0000-4000-8000-000000000000' }),
    ).toString('base64url');
    const r = await api.call('GET', `/rate-limits/rules?cursor=${cursor}`, { key: other.admin });
    expect(r.body.items.map((x: { id: string }) => x.id)).not.toContain(ruleId);
  });
});

describe('permitted calls', () => {
  it.each(routes.map((r) => [label(r), r] as const))(
    '%s succeeds with exactly its permission',
    async (_label, route) => {
      const id =
        route.method === 'DELETE' || route.method === 'PATCH'
          ? (await api.call('POST', '/rate-limits/rules', { key: org.admin, body: { ...base, name: 'Scratch' } })).body
              .id
          : ruleId;
      const r = await api.call(route.method, route.path(id), {
        key: await org.key('member', [route.needs]),
        body: route.body,
      });
      expect(r.status).toBe(route.success);
    },
  );
});
