import { randomUUID } from 'node:crypto';
import { createTestOrg, createTestRule, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';

// POST /rate-limits/check against real Postgres rules and real counters, in both stores. Each test works in an
// organisation of its own, so the counters and rule caches of tests never meet.

const U1 = randomUUID();
const U2 = randomUUID();
const U3 = randomUUID();

describe.each(['memory', 'redis'] as const)('POST /rate-limits/check (%s store)', (store) => {
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi({ env: { RATE_LIMIT_STORE: store }, queues: false });
  });
  afterAll(() => api.close());

  async function newOrg(): Promise<TestOrg> {
    return createTestOrg(api.db);
  }

  const rule = (org: TestOrg, body: Record<string, unknown>) => createTestRule(api, org, body);

  async function check(org: TestOrg, call: Record<string, unknown> = {}) {
    const response = await api.call('POST', '/rate-limits/check', {
      key: org.member,
      body: { tool_key: 'github.create_issue', ...call },
    });
    expect(response.status).toBe(200);
    return response.body;
  }

  it('with no rule, allows every call and lists none', async () => {
    const org = await newOrg();
    expect(await check(org)).toEqual({ allowed: true, retry_after_ms: null, denied_by: null, rules: [] });
  });

  it('composes rules: an org-wide ceiling and a tighter per-user rule are both enforced', async () => {
    const org = await newOrg();
    const ceiling = await rule(org, { name: 'org ceiling', key_by: ['org'], limit: 5 });
    const perUser = await rule(org, { name: 'per user', key_by: ['user', 'org'], limit: 2 });

    const first = await check(org, { user_id: U1 });
    expect(first.allowed).toBe(true);
    expect(first.rules).toEqual([
      { rule_id: ceiling.id, action: 'deny', limit: 5, remaining: 4, reset_at: expect.any(String), exceeded: false },
      { rule_id: perUser.id, action: 'deny', limit: 2, remaining: 1, reset_at: expect.any(String), exceeded: false },
    ]);
    expect((await check(org, { user_id: U1 })).allowed).toBe(true);
    // The per-user rule stops U1 ...
    const third = await check(org, { user_id: U1 });
    expect(third).toMatchObject({ allowed: false, denied_by: perUser.id });
    expect(third.retry_after_ms).toBeGreaterThan(0);
    expect(third.retry_after_ms).toBeLessThanOrEqual(60_000);
    expect(third.rules.map((r: { remaining: number }) => r.remaining)).toEqual([3, 0]);
    // ... U2 has a budget of its own ...
    expect((await check(org, { user_id: U2 })).allowed).toBe(true);
    expect((await check(org, { user_id: U2 })).allowed).toBe(true);
    // ... and the org ceiling (5) stops U3 after one call, though U3's own budget is untouched.
    const u3 = await check(org, { user_id: U3 });
    expect(u3.allowed).toBe(true);
    expect(u3.rules.map((r: { remaining: number }) => r.remaining)).toEqual([0, 1]);
    const u3Again = await check(org, { user_id: U3 });
    expect(u3Again).toMatchObject({ allowed: false, denied_by: ceiling.id });
    expect(u3Again.rules.map((r: { remaining: number; exceeded: boolean }) => [r.remaining, r.exceeded])).toEqual([
      [0, true],
      [1, false],
    ]);
  });

  it('is atomic: a denied call consumes no budget of the other rules, also under 50 concurrent checks', async () => {
    const org = await newOrg();
    const ceiling = await rule(org, { name: 'org', key_by: ['org'], limit: 20 });
    await rule(org, { name: 'per user', key_by: ['org', 'user'], limit: 3 });
    const decisions = await Promise.all(Array.from({ length: 50 }, () => check(org, { user_id: U1 })));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(3);
    // Only the 3 admitted calls reached the org budget: the next user sees 20 - 3 - 1 left.
    const other = await check(org, { user_id: U2 });
    expect(other.rules.find((r: { rule_id: string }) => r.rule_id === ceiling.id).remaining).toBe(16);
  });

  it('counts cost as that many calls; a cost that does not fit denies without consuming', async () => {
    const org = await newOrg();
    const r = await rule(org, { limit: 5 });
    expect((await check(org, { cost: 3 })).rules[0].remaining).toBe(2);
    const tooMuch = await check(org, { cost: 3 });
    expect(tooMuch).toMatchObject({ allowed: false, denied_by: r.id });
    expect(tooMuch.rules[0]).toMatchObject({ remaining: 2, exceeded: true });
    expect((await check(org, { cost: 2 })).rules[0].remaining).toBe(0);
    // A cost above the whole budget can never fit: no retry time is offered.
    const never = await check(org, { cost: 6 });
    expect(never).toMatchObject({ allowed: false, denied_by: r.id, retry_after_ms: null });
  });

  it('log_only rules never deny; the decision marks them and rate_limit.exceeded is recorded once per rule, key and window', async () => {
    const org = await newOrg();
    const watch = await rule(org, { name: 'watch', action: 'log_only', key_by: ['org', 'user'], limit: 2 });
    const results = [];
    for (let i = 0; i < 5; i += 1) results.push(await check(org, { user_id: U1 }));
    expect(results.map((d) => d.allowed)).toEqual([true, true, true, true, true]);
    expect(results.map((d) => d.rules[0].exceeded)).toEqual([false, false, true, true, true]);
    expect(results.every((d) => d.denied_by === null && d.retry_after_ms === null)).toBe(true);
    await check(org, { user_id: U2 });
    await check(org, { user_id: U2 });
    await check(org, { user_id: U2 });
    await api.limiter.idle();
    const events = await api.db.auditEvent.findMany({
      where: { orgId: org.orgId, action: 'rate_limit.exceeded' },
      orderBy: { receivedAt: 'asc' },
    });
    expect(events.map((e) => (e.payload as { key: string }).key).sort()).toEqual(
      [`org=${org.orgId};user=${U1}`, `org=${org.orgId};user=${U2}`].sort(),
    );
    expect(events[0]).toMatchObject({
      actorType: 'user',
      resourceType: 'rate_limit_rule',
      resourceId: watch.id,
      resourceDisplayName: 'watch',
    });
    expect(events[0]!.payload).toMatchObject({
      rule_id: watch.id,
      rule_name: 'watch',
      rule_action: 'log_only',
      limit: 2,
      window_seconds: 60,
      denied: false,
      call: { tool_key: 'github.create_issue', cost: 1 },
    });
  });

  it('a deny rule records its first denial of a window too, with denied: true', async () => {
    const org = await newOrg();
    const r = await rule(org, { limit: 1 });
    await check(org);
    await check(org);
    await check(org);
    await api.limiter.idle();
    const events = await api.db.auditEvent.findMany({ where: { orgId: org.orgId, action: 'rate_limit.exceeded' } });
    expect(events).toHaveLength(1);
    expect(events[0]!.payload).toMatchObject({ rule_id: r.id, rule_action: 'deny', denied: true });
  });

  it('a disabled rule is not enforced; enabling it takes effect at once (the rule cache is invalidated)', async () => {
    const org = await newOrg();
    const r = await rule(org, { limit: 1, status: 'disabled' });
    expect(await check(org)).toMatchObject({ allowed: true, rules: [] });
    expect(await check(org)).toMatchObject({ allowed: true, rules: [] });
    expect(
      (await api.call('PATCH', `/rate-limits/rules/${r.id}`, { key: org.admin, body: { status: 'active' } })).status,
    ).toBe(200);
    // Within one second of the change (pub/sub is asynchronous, so allow it that long).
    const deadline = Date.now() + 1000;
    let decision = await check(org);
    while (decision.rules.length === 0 && Date.now() < deadline) decision = await check(org);
    expect(decision.rules.map((x: { rule_id: string }) => x.rule_id)).toEqual([r.id]);
    expect((await check(org)).allowed).toBe(false);
    await api.call('DELETE', `/rate-limits/rules/${r.id}`, { key: org.admin });
    const after = Date.now() + 1000;
    let freed = await check(org);
    while (!freed.allowed && Date.now() < after) freed = await check(org);
    expect(freed).toEqual({ allowed: true, retry_after_ms: null, denied_by: null, rules: [] });
  });

  it('rolls the window over: with a 1-second window the budget returns once reset_at has passed', async () => {
    const org = await newOrg();
    await rule(org, { limit: 2, window_seconds: 1 });
    const first = await check(org);
    expect(first.rules[0]).toMatchObject({ limit: 2, remaining: 1 });
    await check(org);
    const denied = await check(org);
    expect(denied.allowed).toBe(false);
    expect(denied.retry_after_ms).toBeLessThanOrEqual(1000);
    const resetAt = Date.parse(denied.rules[0].reset_at);
    // Wait past the window's end (plus the clock's millisecond) on this machine's clock.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, resetAt - Date.now()) + 20));
    const fresh = await check(org);
    expect(fresh.allowed).toBe(true);
    expect(fresh.rules[0].remaining).toBe(1);
    expect(Date.parse(fresh.rules[0].reset_at)).toBeGreaterThanOrEqual(resetAt + 1000);
  });

  it('derives the window from the burst rule: 1000 per hour admits 17 calls per 61.2 s', async () => {
    const org = await newOrg();
    await rule(org, { limit: 1000, window_seconds: 3600, burst: 0 });
    const first = await check(org);
    expect(first.rules[0]).toMatchObject({ limit: 17, remaining: 16 });
    // reset_at is exactly T after the window's first call (on the store's clock, so compare to the response time).
    const resetIn = Date.parse(first.rules[0].reset_at) - Date.now();
    expect(resetIn).toBeGreaterThan(55_000);
    expect(resetIn).toBeLessThanOrEqual(61_200);
  });

  it('lists only the rules whose scope matches the call', async () => {
    const org = await newOrg();
    const github = await rule(org, {
      name: 'github',
      scope: { type: 'mcp_tool_call', tool_patterns: ['github.*'] },
      limit: 100,
    });
    const costly = await rule(org, {
      name: 'costly',
      scope: { type: 'mcp_tool_call', condition: 'call.cost >= 5' },
      limit: 100,
    });
    const ops = await rule(org, {
      name: 'ops',
      scope: { type: 'mcp_tool_call', groups: ['ops'], user_ids: [U1] },
      limit: 100,
    });
    const ids = async (call: Record<string, unknown>) =>
      (await check(org, call)).rules.map((r: { rule_id: string }) => r.rule_id);
    expect(await ids({})).toEqual([github.id]);
    expect(await ids({ tool_key: 'gitlab.x', cost: 5 })).toEqual([costly.id]);
    expect(await ids({ tool_key: 'gitlab.x', groups: ['ops'], user_id: U1 })).toEqual([ops.id]);
    expect(await ids({ tool_key: 'gitlab.x', groups: ['ops'], user_id: U2 })).toEqual([]);
  });

  it('keys budgets by key_by: per tool, each tool has its own', async () => {
    const org = await newOrg();
    await rule(org, { key_by: ['tool', 'org'], limit: 1 });
    expect((await check(org, { tool_key: 'a' })).allowed).toBe(true);
    expect((await check(org, { tool_key: 'a' })).allowed).toBe(false);
    expect((await check(org, { tool_key: 'b' })).allowed).toBe(true);
  });

  it('answers a bad request with 422 naming the field, and never consumes on it', async () => {
    const org = await newOrg();
    await rule(org, { limit: 1 });
    const bad: [Record<string, unknown>, string][] = [
      [{}, 'tool_key'],
      [{ tool_key: '' }, 'tool_key'],
      [{ tool_key: 'x', cost: 0 }, 'cost'],
      [{ tool_key: 'x', cost: 1001 }, 'cost'],
      [{ tool_key: 'x', cost: 1.5 }, 'cost'],
      [{ tool_key: 'x', user_id: 'alice' }, 'user_id'],
      [{ tool_key: 'x', groups: 'ops' }, 'groups'],
      [{ tool_key: 'x', mcp_tag_ids: ['nope'] }, 'mcp_tag_ids.0'],
      [{ tool_key: 'x', surprise: 1 }, 'surprise'],
    ];
    for (const [body, path] of bad) {
      const response = await api.call('POST', '/rate-limits/check', { key: org.member, body });
      expect([body, response.status, response.body.error.code]).toEqual([body, 422, 'validation_error']);
      expect(response.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    expect((await check(org)).allowed).toBe(true);
  });

  it('needs check_rate_limits', async () => {
    const org = await newOrg();
    const viewer = await org.key('member', ['view_rate_limits']);
    expect((await api.call('POST', '/rate-limits/check', { key: viewer, body: { tool_key: 'x' } })).status).toBe(403);
    expect((await api.call('POST', '/rate-limits/check', { body: { tool_key: 'x' } })).status).toBe(401);
    const checker = await org.key('member', ['check_rate_limits']);
    expect((await api.call('POST', '/rate-limits/check', { key: checker, body: { tool_key: 'x' } })).status).toBe(200);
  });

  it('answers the same on the path served before Express and on the route (a query string or a trailing slash)', async () => {
    const org = await newOrg();
    const ceiling = await rule(org, { limit: 3 });
    const spellings = ['/rate-limits/check', '/rate-limits/check?trace=1', '/rate-limits/check/'];
    const remaining = [];
    for (const path of spellings) {
      const response = await api.call('POST', path, { key: org.member, body: { tool_key: 'x' } });
      expect([path, response.status]).toEqual([path, 200]);
      expect(response.body.rules[0].rule_id).toBe(ceiling.id);
      // The RateLimit header fields (CONTRACT 19) on every spelling.
      expect(response.headers.get('ratelimit-policy')).toBe(`"${ceiling.id}";q=3;w=60`);
      expect(response.headers.get('ratelimit')).toMatch(
        new RegExp(`^"${ceiling.id}";r=${response.body.rules[0].remaining};t=(59|60)$`),
      );
      remaining.push(response.body.rules[0].remaining);
    }
    // One budget, counted by every spelling.
    expect(remaining).toEqual([2, 1, 0]);
    for (const path of spellings) {
      const errors = [
        [await api.call('POST', path, { key: org.member, body: { tool_key: 'x', cost: 0 } }), 422, 'validation_error'],
        [await api.call('POST', path, { key: org.member, body: '{"tool_key":' }), 400, 'bad_request'],
        [await api.call('POST', path, { key: org.member, body: '[1]' }), 400, 'bad_request'],
        [await api.call('POST', path, { body: { tool_key: 'x' } }), 401, 'unauthorized'],
        [
          await api.call('POST', path, { key: org.member, body: 'x'.repeat(1024 * 1024 + 1) }),
          413,
          'payload_too_large',
        ],
      ] as const;
      for (const [response, status, code] of errors) {
        expect([path, response.status, response.body.error.code]).toEqual([path, status, code]);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      }
    }
  });
});
