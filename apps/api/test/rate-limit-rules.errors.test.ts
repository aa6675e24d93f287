import { compileCallCondition } from '@gatehook/conditions/call-condition';
import { randomUUID } from 'node:crypto';
import { RULE_LIMITS } from '@gatehook/core/rate-limit-rule-schema';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';

let api: TestApi;
let org: TestOrg;
let ruleId: string;
let stored: Record<string, unknown>;

const base = {
  name: 'Tool calls',
  scope: { type: 'mcp_tool_call' },
  key_by: ['org', 'user'],
  limit: 10,
  window_seconds: 60,
};

beforeAll(async () => {
  api = await startTestApi({ queues: false });
  org = await createTestOrg(api.db);
  const created = await api.call('POST', '/rate-limits/rules', { key: org.admin, body: { ...base, burst: 5 } });
  expect(created.status).toBe(201);
  ruleId = created.body.id;
  stored = created.body;
});
afterAll(() => api.close());

function expectErrorShape(body: unknown, code: string) {
  expect(body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
}

function pathsOf(body: { error: { details?: { path: string }[] } }): string[] {
  return [...new Set((body.error.details ?? []).map((d) => d.path))];
}

const longCondition = `call.tool_key == "${'x'.repeat(1006)}"`;
const scope = (fields: Record<string, unknown>) => ({ scope: { type: 'mcp_tool_call', ...fields } });

// One row per field rule of SPEC 2.5 / CONTRACT 8, each a 422 naming exactly that field. POST sends the base
// rule with the row merged in; PATCH sends the row alone onto the stored rule (limit 10, burst 5).
const fieldRules: [string, Record<string, unknown>, string][] = [
  ['key_by without org', { key_by: ['user', 'tool'] }, 'key_by'],
  ['key_by with a duplicate', { key_by: ['org', 'user', 'org'] }, 'key_by.2'],
  ['key_by with an unknown value', { key_by: ['org', 'team'] }, 'key_by.1'],
  ['key_by empty', { key_by: [] }, 'key_by'],
  ['key_by not an array', { key_by: 'org' }, 'key_by'],
  ['limit 0', { limit: 0 }, 'limit'],
  ['limit 1.5', { limit: 1.5 }, 'limit'],
  ['limit as a string', { limit: '10' }, 'limit'],
  ['limit beyond int32', { limit: 2_147_483_648 }, 'limit'],
  ['limit null', { limit: null }, 'limit'],
  ['window_seconds 0', { window_seconds: 0 }, 'window_seconds'],
  ['window_seconds 3601', { window_seconds: 3601 }, 'window_seconds'],
  ['window_seconds 2.5', { window_seconds: 2.5 }, 'window_seconds'],
  ['burst -1', { burst: -1 }, 'burst'],
  ['burst above limit', { burst: 11 }, 'burst'],
  ['burst fractional', { burst: 1.5 }, 'burst'],
  ['scope.type missing', { scope: { user_ids: [] } }, 'scope.type'],
  ['scope.type wrong', scope({ type: 'http_request' }), 'scope.type'],
  ['scope not an object', { scope: 'everything' }, 'scope'],
  ['a bad uuid in scope.user_ids', scope({ user_ids: ['not-a-uuid'] }), 'scope.user_ids.0'],
  [
    'a bad uuid in scope.mcp_tag_ids',
    scope({ mcp_tag_ids: ['6a0e0d7c-0000-4000-8000-000000000001', '42'] }),
    'scope.mcp_tag_ids.1',
  ],
  ['an empty string in scope.tool_patterns', scope({ tool_patterns: ['github.*', ''] }), 'scope.tool_patterns.1'],
  [
    '51 patterns in scope.tool_patterns (50 per rule)',
    scope({ tool_patterns: Array.from({ length: 51 }, (_, i) => `tool-${i}.*`) }),
    'scope.tool_patterns',
  ],
  ['scope.groups not an array', scope({ groups: 'ops' }), 'scope.groups'],
  ['scope.condition not a string', scope({ condition: true }), 'scope.condition'],
  ['scope.condition of 1025 characters', scope({ condition: longCondition }), 'scope.condition'],
  ['an unknown top-level field', { priority: 1 }, 'priority'],
  ['an unknown field in scope', scope({ tools: ['x'] }), 'scope.tools'],
  ['name blank', { name: '   ' }, 'name'],
  ['name over 200 characters', { name: 'n'.repeat(201) }, 'name'],
  ['name not a string', { name: 5 }, 'name'],
  ['description over 2000 characters', { description: 'd'.repeat(2001) }, 'description'],
  ['status not in the enum', { status: 'paused' }, 'status'],
  ['action not in the enum', { action: 'block' }, 'action'],
];

// Conditions the CEL compiler refuses: the 422 carries its message on scope.condition.
const badConditions: [string, string][] = [
  ['not boolean', 'call.cost + 1'],
  ['a syntax error', 'call.tool_key == '],
  ['an unknown attribute', 'call.tool == "x"'],
  ['an unknown variable', 'event.action == "x"'],
];

describe('422 validation_error per field rule', () => {
  it('the 1025-character condition row really is 1025 characters', () => {
    expect(longCondition).toHaveLength(1025);
  });

  it.each(fieldRules)('POST rejects %s', async (_name, fields, path) => {
    const r = await api.call('POST', '/rate-limits/rules', { key: org.admin, body: { ...base, ...fields } });
    expect(r.status).toBe(422);
    expectErrorShape(r.body, 'validation_error');
    expect(pathsOf(r.body)).toEqual([path]);
  });

  it.each(fieldRules)('PATCH rejects %s', async (_name, fields, path) => {
    const r = await api.call('PATCH', `/rate-limits/rules/${ruleId}`, { key: org.admin, body: fields });
    expect(r.status).toBe(422);
    expectErrorShape(r.body, 'validation_error');
    expect(pathsOf(r.body)).toEqual([path]);
  });

  it.each(badConditions)(
    'POST and PATCH reject a condition that is %s with the compiler message',
    async (_name, condition) => {
      const compiled = compileCallCondition(condition);
      expect(compiled.ok).toBe(false);
      const expected = compiled.ok
        ? []
        : compiled.issues.map((issue) => ({ path: 'scope.condition', message: issue.message }));
      const post = await api.call('POST', '/rate-limits/rules', {
        key: org.admin,
        body: { ...base, ...scope({ condition }) },
      });
      expect(post.status).toBe(422);
      expect(post.body.error.code).toBe('validation_error');
      expect(post.body.error.details).toEqual(expected);
      const patch = await api.call('PATCH', `/rate-limits/rules/${ruleId}`, {
        key: org.admin,
        body: scope({ condition }),
      });
      expect(patch.status).toBe(422);
      expect(patch.body.error.details).toEqual(expected);
    },
  );

  it.each([
    ['name', { scope: base.scope, key_by: base.key_by, limit: 10, window_seconds: 60 }],
    ['scope', { name: 'x', key_by: base.key_by, limit: 10, window_seconds: 60 }],
    ['key_by', { name: 'x', scope: base.scope, limit: 10, window_seconds: 60 }],
    ['limit', { name: 'x', scope: base.scope, key_by: base.key_by, window_seconds: 60 }],
    ['window_seconds', { name: 'x', scope: base.scope, key_by: base.key_by, limit: 10 }],
  ])('POST requires %s', async (field, body) => {
    const r = await api.call('POST', '/rate-limits/rules', { key: org.admin, body });
    expect(r.status).toBe(422);
    expect(pathsOf(r.body)).toEqual([field]);
  });

  it('PATCH lowering limit below the stored burst is a 422 on burst', async () => {
    const r = await api.call('PATCH', `/rate-limits/rules/${ruleId}`, { key: org.admin, body: { limit: 4 } });
    expect(r.status).toBe(422);
    expect(r.body.error.details).toEqual([{ path: 'burst', message: 'burst must be at most limit (4)' }]);
  });

  it('burst equal to limit and the bounds of window_seconds are accepted', async () => {
    for (const fields of [{ burst: 10 }, { window_seconds: 1 }, { window_seconds: 3600 }, { limit: 2_147_483_647 }]) {
      const r = await api.call('POST', '/rate-limits/rules', { key: org.admin, body: { ...base, ...fields } });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject(fields);
    }
  });

  it('several broken fields are all named', async () => {
    const r = await api.call('POST', '/rate-limits/rules', {
      key: org.admin,
      body: { ...base, limit: 0, window_seconds: 0, key_by: ['user'] },
    });
    expect(r.status).toBe(422);
    expect(pathsOf(r.body).sort()).toEqual(['key_by', 'limit', 'window_seconds']);
  });

  it('a rejected PATCH changes nothing and records nothing', async () => {
    const before = await api.db.auditEvent.count({ where: { orgId: org.orgId, resourceId: ruleId } });
    const r = await api.call('PATCH', `/rate-limits/rules/${ruleId}`, {
      key: org.admin,
      body: { name: 'Changed', limit: 3 },
    });
    expect(r.status).toBe(422);
    expect((await api.call('GET', `/rate-limits/rules/${ruleId}`, { key: org.admin })).body).toEqual(stored);
    expect(await api.db.auditEvent.count({ where: { orgId: org.orgId, resourceId: ruleId } })).toBe(before);
  });
});

describe('422 past the active rules of an organisation (RULE_LIMITS.activeRulesPerOrganisation)', () => {
  it('refuses the 101st active rule on status, whether created or enabled, and counts no disabled rule', async () => {
    const capped = await createTestOrg(api.db);
    // 100 active rules, inserted directly: the limit, not the route, is under test here.
    await api.db.rateLimitRule.createMany({
      data: Array.from({ length: RULE_LIMITS.activeRulesPerOrganisation }, (_, i) => ({
        id: randomUUID(),
        orgId: capped.orgId,
        name: `r${i}`,
        status: 'active' as const,
        scope: { type: 'mcp_tool_call' },
        keyBy: ['org'],
        limit: 10,
        windowSeconds: 60,
        burst: 1,
        action: 'deny' as const,
      })),
    });
    const refused = await api.call('POST', '/rate-limits/rules', { key: capped.admin, body: base });
    expect(refused.status).toBe(422);
    expectErrorShape(refused.body, 'validation_error');
    expect(pathsOf(refused.body)).toEqual(['status']);
    expect(refused.body.error.details[0].message).toMatch(/at most 100 active rules/);

    // A disabled rule may still be created, but not enabled while the cap is reached.
    const disabled = await api.call('POST', '/rate-limits/rules', {
      key: capped.admin,
      body: { ...base, status: 'disabled' },
    });
    expect(disabled.status).toBe(201);
    const enabled = await api.call('PATCH', `/rate-limits/rules/${disabled.body.id}`, {
      key: capped.admin,
      body: { status: 'active' },
    });
    expect(enabled.status).toBe(422);
    expect(pathsOf(enabled.body)).toEqual(['status']);

    // Another organisation is not affected.
    expect((await api.call('POST', '/rate-limits/rules', { key: org.admin, body: base })).status).toBe(201);
  });
});

describe('400 bad_request', () => {
  it.each([
    ['a body that is not JSON', '{"name": "x",', { 'content-type': 'application/json' }],
    ['a JSON array', '[]', { 'content-type': 'application/json' }],
    ['a JSON string', '"rule"', { 'content-type': 'application/json' }],
    ['a text body', JSON.stringify(base), { 'content-type': 'text/plain' }],
  ])('POST and PATCH with %s', async (_name, body, headers) => {
    const post = await api.call('POST', '/rate-limits/rules', { key: org.admin, body, headers });
    expect(post.status).toBe(400);
    expectErrorShape(post.body, 'bad_request');
    const patch = await api.call('PATCH', `/rate-limits/rules/${ruleId}`, { key: org.admin, body, headers });
    expect(patch.status).toBe(400);
    expectErrorShape(patch.body, 'bad_request');
  });

  it('POST without a body', async () => {
    const r = await api.call('POST', '/rate-limits/rules', { key: org.admin });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/JSON body is required/);
  });

  it.each([
    ['?status=bogus', 'status'],
    ['?status=ACTIVE', 'status'],
    ['?status=active&status=disabled', 'status'],
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?limit=ten', 'limit'],
    ['?cursor=not-a-cursor', 'cursor'],
    [`?cursor=${Buffer.from('{"c":"2026-01-01T00:00:00.000Z","i":"x"}').toString('base64url')}`, 'cursor'],
    [
      `?cursor=${Buffer.from('{"c":"yesterday","i":"6a0e0d7c-0000-4000-8000-000000000001"}').toString('base64url')}`,
      'cursor',
    ],
  ])('GET /rate-limits/rules%s', async (query, path) => {
    const r = await api.call('GET', `/rate-limits/rules${query}`, { key: org.admin });
    expect(r.status).toBe(400);
    expectErrorShape(r.body, 'bad_request');
    expect(pathsOf(r.body)).toEqual([path]);
  });
});

describe('404 not_found', () => {
  const unknown = '6a0e0d7c-0000-4000-8000-000000000000';
  it.each(['GET', 'PATCH', 'DELETE'])('%s of an unknown rule', async (method) => {
    const r = await api.call(method, `/rate-limits/rules/${unknown}`, {
      key: org.admin,
      body: method === 'PATCH' ? { name: 'x' } : undefined,
    });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: { code: 'not_found', message: 'Rate limit rule not found' } });
  });

  it.each(
    ['not-a-uuid', '123', `${'6a0e0d7c-0000-4000-8000-00000000000'}`, "1' OR '1'='1"].flatMap((id) =>
      ['GET', 'PATCH', 'DELETE'].map((m) => [m, id]),
    ),
  )('%s of a malformed id (%s)', async (method, id) => {
    const r = await api.call(method, `/rate-limits/rules/${encodeURIComponent(id)}`, {
      key: org.admin,
      body: method === 'PATCH' ? { name: 'x' } : undefined,
    });
    expect(r.status).toBe(404);
    expectErrorShape(r.body, 'not_found');
  });

  it('PATCH of an unknown rule with an invalid body is still a 4xx, never a 5xx', async () => {
    const r = await api.call('PATCH', `/rate-limits/rules/${unknown}`, { key: org.admin, body: { limit: 0 } });
    expect(r.status).toBe(422);
  });
});

describe('Redis unreachable', () => {
  it('a rule change still commits and answers success; the lost announcement is logged', async () => {
    const logLines: string[] = [];
    const offline = await startTestApi({ queues: false, logLines });
    // The API's own connection goes away, as when Redis is down: every publish now fails at once.
    offline.redis.disconnect();
    try {
      const created = await offline.call('POST', '/rate-limits/rules', {
        key: org.admin,
        body: { ...base, name: 'Offline' },
      });
      expect(created.status).toBe(201);
      const patched = await offline.call('PATCH', `/rate-limits/rules/${created.body.id}`, {
        key: org.admin,
        body: { limit: 20 },
      });
      expect(patched.status).toBe(200);
      expect(patched.body.limit).toBe(20);
      expect((await offline.call('DELETE', `/rate-limits/rules/${created.body.id}`, { key: org.admin })).status).toBe(
        204,
      );
      expect(await api.db.rateLimitRule.findUnique({ where: { id: created.body.id } })).toBeNull();

      const warnings = logLines.map((line) => JSON.parse(line)).filter((entry) => entry.msg?.includes('not announced'));
      expect(warnings).toHaveLength(3);
      expect(warnings[0]).toMatchObject({ level: 40, org_id: org.orgId });
    } finally {
      await offline.close();
    }
  });
});
