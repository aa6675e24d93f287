import { randomUUID } from 'node:crypto';
import { invalidationChannel } from '@gatehook/cache/invalidation';
import { RULES_TOPIC } from '@gatehook/ratelimit/rule-cache';
import { Redis } from 'ioredis';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { waitFor } from '@gatehook/testkit/until';

let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi({ queues: false });
  org = await createTestOrg(api.db);
});
afterAll(() => api.close());

const base = { name: 'Tool calls', scope: { type: 'mcp_tool_call' }, key_by: ['org'], limit: 10, window_seconds: 60 };
const emptyScope = {
  type: 'mcp_tool_call',
  mcp_ids: [],
  agent_slugs: [],
  agent_instance_ids: [],
  user_ids: [],
  groups: [],
  agent_slug_tag_ids: [],
  mcp_tag_ids: [],
  tool_tag_ids: [],
  tool_patterns: [],
  condition: '',
  condition_description: '',
};

async function create(body: Record<string, unknown> = base, key = org.admin) {
  const response = await api.call('POST', '/rate-limits/rules', { key, body });
  expect(response.status).toBe(201);
  return response.body;
}

async function auditEvents(resourceId: string) {
  return api.db.auditEvent.findMany({ where: { orgId: org.orgId, resourceId }, orderBy: { receivedAt: 'asc' } });
}

describe('POST /rate-limits/rules', () => {
  it('applies the decided defaults when only the required fields are given', async () => {
    const created = await create();
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Tool calls',
      description: null,
      status: 'active',
      scope: emptyScope,
      key_by: ['org'],
      limit: 10,
      window_seconds: 60,
      burst: 1,
      action: 'deny',
      created_at: expect.any(String),
      updated_at: created.created_at,
    });
    expect(new Date(created.created_at).toISOString()).toBe(created.created_at);
    expect(Math.abs(Date.now() - Date.parse(created.created_at))).toBeLessThan(60_000);

    const [event] = await auditEvents(created.id);
    expect(event).toMatchObject({
      action: 'rate_limit_rule.created',
      actorType: 'user',
      actorDisplayName: 'admin-none',
      resourceType: 'rate_limit_rule',
      resourceDisplayName: 'Tool calls',
      changes: [],
    });
    expect(event!.payload).toEqual({ rule_id: created.id, rule_name: 'Tool calls' });
  });

  it('stores every field given, returns key_by sorted and scope uuids in lower case', async () => {
    const user = randomUUID();
    const mcp = randomUUID();
    const created = await create({
      name: 'Per user per tool',
      description: 'Stops a runaway agent',
      status: 'disabled',
      scope: {
        type: 'mcp_tool_call',
        user_ids: [user.toUpperCase()],
        mcp_ids: [mcp],
        groups: ['engineering'],
        tool_patterns: ['github.*', 'jira.create_?'],
        condition: 'call.cost > 1',
        condition_description: 'expensive calls only',
      },
      key_by: ['user', 'tool', 'org'],
      limit: 1000,
      window_seconds: 3600,
      burst: 0,
      action: 'log_only',
    });
    expect(created).toMatchObject({
      name: 'Per user per tool',
      description: 'Stops a runaway agent',
      status: 'disabled',
      scope: {
        ...emptyScope,
        user_ids: [user],
        mcp_ids: [mcp],
        groups: ['engineering'],
        tool_patterns: ['github.*', 'jira.create_?'],
        condition: 'call.cost > 1',
        condition_description: 'expensive calls only',
      },
      key_by: ['org', 'tool', 'user'],
      limit: 1000,
      window_seconds: 3600,
      burst: 0,
      action: 'log_only',
    });
    const row = await api.db.rateLimitRule.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.keyBy).toEqual(['org', 'tool', 'user']);
    expect(row.orgId).toBe(org.orgId);
  });

  it('a member with manage_rate_limits may create', async () => {
    const created = await create({ ...base, name: 'By member' }, await org.key('member', ['manage_rate_limits']));
    const [event] = await auditEvents(created.id);
    expect(event!.actorDisplayName).toBe('member-manage_rate_limits');
  });
});

describe('GET /rate-limits/rules/{rule_id}', () => {
  it('returns the rule exactly as created', async () => {
    const created = await create({ ...base, key_by: ['tool', 'org'], burst: 5 });
    const fetched = await api.call('GET', `/rate-limits/rules/${created.id}`, {
      key: await org.key('member', ['view_rate_limits']),
    });
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(created);
  });

  it('accepts the id in upper case', async () => {
    const created = await create();
    const fetched = await api.call('GET', `/rate-limits/rules/${created.id.toUpperCase()}`, { key: org.admin });
    expect(fetched.status).toBe(200);
    expect(fetched.body.id).toBe(created.id);
  });
});

describe('GET /rate-limits/rules', () => {
  it('lists oldest first, ties broken by id, across pages with no item twice', async () => {
    const listOrg = await createTestOrg(api.db);
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await create({ ...base, name: `rule ${i}` }, listOrg.admin)).id);
    // Rules 1 to 3 share one created_at, so the order among them, and the cursor across them, rests on the id.
    const t0 = Date.parse('2026-01-01T00:00:00.000Z');
    const at = [t0, t0 + 1000, t0 + 1000, t0 + 1000, t0 + 2000];
    for (const [i, id] of ids.entries())
      await api.db.rateLimitRule.update({ where: { id }, data: { createdAt: new Date(at[i]!) } });
    const expected = [ids[0], ...[ids[1], ids[2], ids[3]].sort(), ids[4]];

    const seen: string[] = [];
    const pageSizes: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
      const r = await api.call('GET', `/rate-limits/rules${query}`, { key: listOrg.member });
      expect(r.status).toBe(200);
      pageSizes.push(r.body.items.length);
      seen.push(...r.body.items.map((rule: { id: string }) => rule.id));
      cursor = r.body.next_cursor;
    } while (cursor);
    expect(pageSizes).toEqual([2, 2, 1]);
    expect(seen).toEqual(expected);

    const all = await api.call('GET', '/rate-limits/rules', { key: listOrg.member });
    expect(all.body.items.map((rule: { id: string }) => rule.id)).toEqual(expected);
    expect(all.body.next_cursor).toBeNull();
    expect(all.body.items[0]).toEqual(
      (await api.call('GET', `/rate-limits/rules/${ids[0]}`, { key: listOrg.member })).body,
    );

    const exact = await api.call('GET', '/rate-limits/rules?limit=5', { key: listOrg.member });
    expect(exact.body.items).toHaveLength(5);
    expect(exact.body.next_cursor).toBeNull();
  });

  it('filters by status', async () => {
    const listOrg = await createTestOrg(api.db);
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await create({ ...base, name: `rule ${i}` }, listOrg.admin)).id);
    const disabled = await api.call('PATCH', `/rate-limits/rules/${ids[1]}`, {
      key: listOrg.admin,
      body: { status: 'disabled' },
    });
    expect(disabled.status).toBe(200);

    const onlyDisabled = await api.call('GET', '/rate-limits/rules?status=disabled', { key: listOrg.member });
    expect(onlyDisabled.body).toEqual({ items: [disabled.body], next_cursor: null });
    const onlyActive = await api.call('GET', '/rate-limits/rules?status=active', { key: listOrg.member });
    expect(onlyActive.body.items.map((rule: { id: string }) => rule.id)).toEqual([ids[0], ids[2]]);
  });

  it('an empty list, unfiltered or filtered, still has an items array', async () => {
    const emptyOrg = await createTestOrg(api.db);
    const empty = await api.call('GET', '/rate-limits/rules', { key: emptyOrg.admin });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ items: [], next_cursor: null });
    await create(base, emptyOrg.admin);
    const filtered = await api.call('GET', '/rate-limits/rules?status=disabled', { key: emptyOrg.admin });
    expect(filtered.body).toEqual({ items: [], next_cursor: null });
  });
});

describe('PATCH /rate-limits/rules/{rule_id}', () => {
  it('changes only the fields present and records a diff of exactly those', async () => {
    const created = await create({ ...base, burst: 3, scope: { type: 'mcp_tool_call', groups: ['ops'] } });
    const r = await api.call('PATCH', `/rate-limits/rules/${created.id}`, {
      key: org.admin,
      body: { limit: 20, description: 'now documented', key_by: ['user', 'org'], name: 'Tool calls' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      ...created,
      limit: 20,
      description: 'now documented',
      key_by: ['org', 'user'],
      updated_at: expect.any(String),
    });
    expect(Date.parse(r.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect((await api.call('GET', `/rate-limits/rules/${created.id}`, { key: org.admin })).body).toEqual(r.body);

    const updated = (await auditEvents(created.id)).filter((e) => e.action === 'rate_limit_rule.updated');
    expect(updated).toHaveLength(1);
    // name was sent unchanged, so it is not in the diff.
    expect(updated[0]!.changes).toEqual([
      { field: 'description', old: null, new: 'now documented' },
      { field: 'key_by', old: ['org'], new: ['org', 'user'] },
      { field: 'limit', old: 10, new: 20 },
    ]);
    expect(updated[0]).toMatchObject({
      resourceType: 'rate_limit_rule',
      resourceId: created.id,
      actorDisplayName: 'admin-none',
    });
    expect(updated[0]!.payload).toEqual({ rule_id: created.id, rule_name: 'Tool calls' });
  });

  it('replaces the scope whole, and a rename is reflected in the audit payload', async () => {
    const user = randomUUID();
    const created = await create({
      ...base,
      scope: { type: 'mcp_tool_call', user_ids: [user], tool_patterns: ['a*'], condition: 'call.cost > 2' },
    });
    const r = await api.call('PATCH', `/rate-limits/rules/${created.id}`, {
      key: org.admin,
      body: { name: 'Renamed', scope: { type: 'mcp_tool_call', groups: ['g'] } },
    });
    expect(r.status).toBe(200);
    expect(r.body.scope).toEqual({ ...emptyScope, groups: ['g'] });
    expect(r.body.name).toBe('Renamed');

    const [event] = (await auditEvents(created.id)).filter((e) => e.action === 'rate_limit_rule.updated');
    expect(event!.changes).toEqual([
      { field: 'name', old: 'Tool calls', new: 'Renamed' },
      {
        field: 'scope',
        old: { ...emptyScope, user_ids: [user], tool_patterns: ['a*'], condition: 'call.cost > 2' },
        new: { ...emptyScope, groups: ['g'] },
      },
    ]);
    expect(event!.payload).toEqual({ rule_id: created.id, rule_name: 'Renamed' });
  });

  it('raises burst and limit together, and clears the description with null', async () => {
    const created = await create({ ...base, description: 'temporary' });
    const r = await api.call('PATCH', `/rate-limits/rules/${created.id}`, {
      key: org.admin,
      body: { limit: 500, burst: 400, description: null, action: 'log_only' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ limit: 500, burst: 400, description: null, action: 'log_only' });
  });

  it('a PATCH that changes nothing records nothing and leaves updated_at alone', async () => {
    const created = await create({ ...base, key_by: ['org', 'tool'] });
    const r = await api.call('PATCH', `/rate-limits/rules/${created.id}`, {
      key: org.admin,
      body: {
        name: 'Tool calls',
        limit: 10,
        key_by: ['tool', 'org'],
        scope: { type: 'mcp_tool_call' },
        description: null,
      },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual(created);
    const empty = await api.call('PATCH', `/rate-limits/rules/${created.id}`, { key: org.admin, body: {} });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual(created);
    expect((await auditEvents(created.id)).map((e) => e.action)).toEqual(['rate_limit_rule.created']);
  });
});

describe('DELETE /rate-limits/rules/{rule_id}', () => {
  it('deletes the rule, answers 404 afterwards and records rate_limit_rule.deleted', async () => {
    const created = await create({ ...base, name: 'Doomed' });
    const r = await api.call('DELETE', `/rate-limits/rules/${created.id}`, { key: org.admin });
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expect((await api.call('GET', `/rate-limits/rules/${created.id}`, { key: org.admin })).status).toBe(404);
    expect((await api.call('DELETE', `/rate-limits/rules/${created.id}`, { key: org.admin })).status).toBe(404);
    expect(await api.db.rateLimitRule.findUnique({ where: { id: created.id } })).toBeNull();
    const list = await api.call('GET', '/rate-limits/rules', { key: org.admin });
    expect(list.body.items.map((rule: { id: string }) => rule.id)).not.toContain(created.id);

    const events = await auditEvents(created.id);
    expect(events.map((e) => e.action)).toEqual(['rate_limit_rule.created', 'rate_limit_rule.deleted']);
    expect(events[1]!.payload).toEqual({ rule_id: created.id, rule_name: 'Doomed' });
    expect(events[1]!.changes).toEqual([]);
  });
});

describe('rule changes are announced on the invalidation channel', () => {
  it('publishes the org id after create, patch and delete, and nothing after a no-op patch', async () => {
    const subscriber = new Redis(api.config.REDIS_URL, { maxRetriesPerRequest: 1 });
    const messages: { channel: string; message: string }[] = [];
    subscriber.on('message', (channel: string, message: string) => messages.push({ channel, message }));
    try {
      const channel = invalidationChannel(api.config.REDIS_PREFIX, RULES_TOPIC);
      await subscriber.subscribe(channel);
      const expected = (n: number) => Array.from({ length: n }, () => ({ channel, message: org.orgId }));

      const created = await create();
      await waitFor(() => messages.length >= 1, { timeoutMs: 2000, everyMs: 10 });
      expect(messages).toEqual(expected(1));

      // Redis delivers in publish order: had the no-op published, its message would arrive before the next one.
      expect(
        (await api.call('PATCH', `/rate-limits/rules/${created.id}`, { key: org.admin, body: { limit: 10 } })).status,
      ).toBe(200);
      expect(
        (await api.call('PATCH', `/rate-limits/rules/${created.id}`, { key: org.admin, body: { limit: 11 } })).status,
      ).toBe(200);
      await waitFor(() => messages.length >= 2, { timeoutMs: 2000, everyMs: 10 });

      // Neither a rejected change nor a read announces anything.
      expect(
        (await api.call('PATCH', `/rate-limits/rules/${created.id}`, { key: org.admin, body: { burst: 12 } })).status,
      ).toBe(422);
      expect((await api.call('GET', `/rate-limits/rules/${created.id}`, { key: org.admin })).status).toBe(200);
      expect((await api.call('DELETE', `/rate-limits/rules/${created.id}`, { key: org.admin })).status).toBe(204);
      await waitFor(() => messages.length >= 3, { timeoutMs: 2000, everyMs: 10 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(messages).toEqual(expected(3));
    } finally {
      await subscriber.quit();
    }
  });
});

describe('/openapi.json', () => {
  it('documents the rule routes from the validating schemas', async () => {
    const r = await api.call('GET', '/openapi.json');
    expect(r.status).toBe(200);
    const rules = r.body.paths['/rate-limits/rules'];
    const rule = r.body.paths['/rate-limits/rules/{rule_id}'];
    expect(Object.keys(rules).sort()).toEqual(['get', 'post']);
    expect(Object.keys(rule).sort()).toEqual(['delete', 'get', 'patch']);
    expect([rules.get, rule.get].map((op) => op['x-permission'])).toEqual(['view_rate_limits', 'view_rate_limits']);
    expect([rules.post, rule.patch, rule.delete].map((op) => op['x-permission'])).toEqual([
      'manage_rate_limits',
      'manage_rate_limits',
      'manage_rate_limits',
    ]);
    expect(rule.get.parameters).toEqual([expect.objectContaining({ name: 'rule_id', in: 'path', required: true })]);
    expect(rules.get.parameters.map((p: { name: string }) => p.name)).toEqual(['limit', 'cursor', 'status']);
    const createBody = rules.post.requestBody.content['application/json'].schema;
    expect([...createBody.required].sort()).toEqual(['key_by', 'limit', 'name', 'scope', 'window_seconds']);
    expect(createBody.properties.window_seconds).toMatchObject({ minimum: 1, maximum: 3600 });
    expect(createBody.additionalProperties).toBe(false);
    expect(rules.post.responses['201'].content['application/json'].schema.required).toEqual(
      expect.arrayContaining(['id', 'scope', 'key_by', 'burst', 'created_at']),
    );
    expect(Object.keys(rule.delete.responses)).toContain('204');
  });
});
