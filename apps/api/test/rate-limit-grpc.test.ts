import { randomUUID } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { createTestOrg, createTestRule, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { descriptor, rlsClient, type RlsClient, type TestRequest, failure } from './envoy-rls-client';

// Envoy's rate limit service (CONTRACT 19) against real Postgres rules and real counters, in both stores (and on
// the Redis Cluster in the redis-cluster project), through a client built from Envoy's own message definitions.
// Each test works in an organisation of its own.

const U1 = randomUUID();
const U2 = randomUUID();
const TAG = randomUUID();

describe.each(['memory', 'redis'] as const)('ShouldRateLimit (%s store)', (store) => {
  let api: TestApi;
  let rls: RlsClient;

  beforeAll(async () => {
    api = await startTestApi({ env: { RATE_LIMIT_STORE: store }, queues: false, grpc: true });
    rls = rlsClient(api.grpcPort);
  });
  afterAll(async () => {
    rls.close();
    await api.close();
  });

  const rule = (org: TestOrg, body: Record<string, unknown>) => createTestRule(api, org, body);

  const check = (org: TestOrg, request: TestRequest) => rls.check(org.member, request);
  const headersOf = (response: { response_headers_to_add?: { key: string; value: string }[] }) =>
    Object.fromEntries((response.response_headers_to_add ?? []).map((h) => [h.key, h.value]));

  it('allows while the budget lasts, then answers OVER_LIMIT with the rule, the budget as it stands and retry-after', async () => {
    const org = await createTestOrg(api.db);
    const r = await rule(org, { limit: 2 });
    const first = await check(org, { descriptors: [descriptor('github.create_issue')] });
    expect(first.overall_code).toBe('OK');
    expect(first.statuses).toEqual([
      {
        code: 'OK',
        current_limit: { name: r.id, requests_per_unit: 2, unit: 'MINUTE' },
        limit_remaining: 1,
        duration_until_reset: expect.objectContaining({ seconds: expect.any(Number) }),
      },
    ]);
    expect(first.statuses![0]!.duration_until_reset!.seconds).toBeLessThanOrEqual(60);
    expect(headersOf(first)).toEqual({
      'RateLimit-Policy': `"${r.id}";q=2;w=60`,
      RateLimit: expect.stringMatching(new RegExp(`^"${r.id}";r=1;t=(59|60)$`)),
    });

    expect((await check(org, { descriptors: [descriptor('github.create_issue')] })).overall_code).toBe('OK');
    const denied = await check(org, { descriptors: [descriptor('github.create_issue')] });
    expect(denied.overall_code).toBe('OVER_LIMIT');
    expect(denied.statuses![0]).toMatchObject({
      code: 'OVER_LIMIT',
      current_limit: { name: r.id, requests_per_unit: 2 },
    });
    // Nothing left, and nothing consumed by the denial: limit_remaining 0 is the proto3 default, so absent on the wire.
    expect(denied.statuses![0]!.limit_remaining ?? 0).toBe(0);
    const headers = headersOf(denied);
    expect(headers.RateLimit).toMatch(new RegExp(`^"${r.id}";r=0;t=\\d+$`));
    expect(Number(headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('shares counters with POST /rate-limits/check, which answers with the same RateLimit fields', async () => {
    const org = await createTestOrg(api.db);
    const r = await rule(org, { limit: 4, key_by: ['org', 'user'] });
    const http = () =>
      api.call('POST', '/rate-limits/check', { key: org.member, body: { tool_key: 'search', user_id: U1 } });
    const grpc = () => check(org, { descriptors: [descriptor('search', [['user_id', U1]])] });

    const a = await http();
    expect(a.body.rules[0].remaining).toBe(3);
    expect(a.headers.get('ratelimit-policy')).toBe(`"${r.id}";q=4;w=60`);
    expect(a.headers.get('ratelimit')).toMatch(new RegExp(`^"${r.id}";r=3;t=(59|60)$`));
    expect((await grpc()).statuses![0]!.limit_remaining).toBe(2);
    expect((await http()).body.rules[0].remaining).toBe(1);
    expect((await grpc()).statuses![0]!.limit_remaining ?? 0).toBe(0);
    const deniedHttp = await http();
    expect(deniedHttp.body.allowed).toBe(false);
    expect(deniedHttp.headers.get('ratelimit')).toMatch(new RegExp(`^"${r.id}";r=0;t=\\d+$`));
    expect((await grpc()).overall_code).toBe('OVER_LIMIT');
    // Another user has a budget of their own, on either interface.
    expect(
      (await check(org, { descriptors: [descriptor('search', [['user_id', U2]])] })).statuses![0]!.limit_remaining,
    ).toBe(3);

    // No matching rule: neither interface sends the fields.
    const other = await createTestOrg(api.db);
    const none = await api.call('POST', '/rate-limits/check', { key: other.member, body: { tool_key: 'search' } });
    expect(none.headers.get('ratelimit')).toBeNull();
    expect(none.headers.get('ratelimit-policy')).toBeNull();
    const noneGrpc = await check(other, { descriptors: [descriptor('search')] });
    expect(noneGrpc).toEqual({ overall_code: 'OK', statuses: [{ code: 'OK' }] });

    const metrics = (await api.call('GET', '/metrics')).text;
    expect(metrics).toMatch(
      new RegExp(`gatehook_rate_limit_decisions_total\\{outcome="allowed",source="${store}",interface="grpc"\\} \\d+`),
    );
    expect(metrics).toMatch(
      new RegExp(`gatehook_rate_limit_decisions_total\\{outcome="denied",source="${store}",interface="http"\\} \\d+`),
    );
    expect(metrics).toMatch(
      /gatehook_rate_limit_decisions_total\{outcome="allowed",source="no_rules",interface="grpc"\} \d+/,
    );
  });

  it('counts costs: the descriptor hits_addend, else the request one, else 1; 0 counts as 1; a cost that does not fit consumes nothing', async () => {
    const org = await createTestOrg(api.db);
    await rule(org, { limit: 20, key_by: ['org'] });
    const remaining = async (request: TestRequest) => (await check(org, request)).statuses![0]!.limit_remaining ?? 0;
    expect(await remaining({ descriptors: [descriptor('x', [], 5)], hitsAddend: 2 })).toBe(15);
    expect(await remaining({ descriptors: [descriptor('x')], hitsAddend: 3 })).toBe(12);
    expect(await remaining({ descriptors: [descriptor('x')] })).toBe(11);
    expect(await remaining({ descriptors: [descriptor('x', [], 0)], hitsAddend: 4 })).toBe(10);
    expect(await remaining({ descriptors: [descriptor('x')], hitsAddend: 0 })).toBe(9);
    const tooMuch = await check(org, { descriptors: [descriptor('x', [], 10)] });
    expect(tooMuch.overall_code).toBe('OVER_LIMIT');
    expect(tooMuch.statuses![0]!.limit_remaining).toBe(9);
    expect(await remaining({ descriptors: [descriptor('x', [], 9)] })).toBe(0);
  });

  it('maps entries to the call attributes that scopes and key_by see', async () => {
    const org = await createTestOrg(api.db);
    const byGroup = await rule(org, {
      name: 'admins',
      limit: 1,
      scope: { type: 'mcp_tool_call', groups: ['admins'], tool_patterns: ['github.*'] },
    });
    const byTag = await rule(org, {
      name: 'tagged tools',
      limit: 5,
      scope: { type: 'mcp_tool_call', tool_tag_ids: [TAG] },
      key_by: ['org', 'tool'],
    });
    const matched = async (entries: [string, string][]) =>
      (await check(org, { descriptors: [{ entries }] })).statuses![0]!.current_limit?.name ?? null;

    expect(await matched([['tool_key', 'slack.post']])).toBeNull();
    expect(
      await matched([
        ['tool_key', 'github.merge'],
        ['group', 'users'],
        ['group', 'admins'],
      ]),
    ).toBe(byGroup.id);
    expect(
      await matched([
        ['tool_key', 'slack.post'],
        ['tool_tag_id', TAG],
      ]),
    ).toBe(byTag.id);
    // Both match: the tightest is the per-group rule with its single call already spent.
    const both = await check(org, {
      descriptors: [
        {
          entries: [
            ['tool_key', 'github.merge'],
            ['group', 'admins'],
            ['tool_tag_id', TAG],
          ],
        },
      ],
    });
    expect(both.overall_code).toBe('OVER_LIMIT');
    expect(both.statuses![0]!.current_limit!.name).toBe(byGroup.id);
    expect(headersOf(both)['RateLimit-Policy']).toBe(`"${byGroup.id}";q=1;w=60, "${byTag.id}";q=5;w=60`);
    // key_by tool: another tool key has a budget of its own.
    expect(
      (
        await check(org, {
          descriptors: [
            {
              entries: [
                ['tool_key', 'slack.read'],
                ['tool_tag_id', TAG],
              ],
            },
          ],
        })
      ).statuses![0]!.limit_remaining,
    ).toBe(4);
  });

  it('checks several descriptors in order, each as its own call; any denial makes the response OVER_LIMIT', async () => {
    const org = await createTestOrg(api.db);
    const tight = await rule(org, {
      name: 'one search',
      limit: 1,
      window_seconds: 1,
      scope: { type: 'mcp_tool_call', tool_patterns: ['search'] },
    });
    const wide = await rule(org, {
      name: 'ten writes',
      limit: 10,
      window_seconds: 3600,
      burst: 10,
      scope: { type: 'mcp_tool_call', tool_patterns: ['write'] },
    });
    const response = await check(org, {
      descriptors: [descriptor('write'), descriptor('search'), descriptor('search'), descriptor('other')],
    });
    expect(response.overall_code).toBe('OVER_LIMIT');
    expect(response.statuses!.map((s) => s.code)).toEqual(['OK', 'OK', 'OVER_LIMIT', 'OK']);
    expect(response.statuses![0]).toMatchObject({
      current_limit: { name: wide.id, requests_per_unit: 10, unit: 'HOUR' },
      limit_remaining: 9,
    });
    expect(response.statuses![1]).toMatchObject({
      current_limit: { name: tight.id, requests_per_unit: 1, unit: 'SECOND' },
    });
    expect(response.statuses![3]!.current_limit).toBeUndefined();
    const headers = headersOf(response);
    // The RateLimit fields are the first descriptor's; retry-after the longest wait of the denied ones.
    expect(headers['RateLimit-Policy']).toBe(`"${wide.id}";q=10;w=3600`);
    expect(headers.RateLimit).toMatch(new RegExp(`^"${wide.id}";r=9;t=(3599|3600)$`));
    expect(headers['retry-after']).toBe('1');
  });

  it('reports the tightest rule: least remaining, then the smallest budget, then the first created; UNKNOWN for other windows', async () => {
    const twins = await createTestOrg(api.db);
    const first = await rule(twins, { name: 'a', limit: 3, window_seconds: 30 });
    await rule(twins, { name: 'b', limit: 3, window_seconds: 30 });
    expect((await check(twins, { descriptors: [descriptor('x')] })).statuses![0]!.current_limit).toEqual({
      name: first.id,
      requests_per_unit: 3,
      unit: 'UNKNOWN',
    });

    const org = await createTestOrg(api.db);
    await rule(org, { name: 'org', limit: 3, key_by: ['org'] });
    const perUser = await rule(org, { name: 'per user', limit: 2, key_by: ['org', 'user'] });
    // U1: org 2 left, U1's 1 left. U2: org 1 left, U2's 1 left, and the per-user budget C is the smaller.
    expect(
      (await check(org, { descriptors: [descriptor('x', [['user_id', U1]])] })).statuses![0]!.current_limit!.name,
    ).toBe(perUser.id);
    const tie = await check(org, { descriptors: [descriptor('x', [['user_id', U2]])] });
    expect(tie.statuses![0]).toMatchObject({
      current_limit: { name: perUser.id, requests_per_unit: 2, unit: 'MINUTE' },
      limit_remaining: 1,
    });
  });

  it('log_only rules never deny; rate_limit.exceeded is recorded once per rule, key and window, as for the HTTP check', async () => {
    const org = await createTestOrg(api.db);
    const watch = await rule(org, { name: 'watch', action: 'log_only', key_by: ['org', 'user'], limit: 2 });
    const codes = [];
    for (let i = 0; i < 4; i += 1)
      codes.push((await check(org, { descriptors: [descriptor('x', [['user_id', U1]])] })).overall_code);
    expect(codes).toEqual(['OK', 'OK', 'OK', 'OK']);
    await api.limiter.idle();
    const events = await api.db.auditEvent.findMany({ where: { orgId: org.orgId, action: 'rate_limit.exceeded' } });
    expect(events).toHaveLength(1);
    expect(events[0]!.payload).toMatchObject({
      rule_id: watch.id,
      rule_action: 'log_only',
      denied: false,
      key: `org=${org.orgId};user=${U1}`,
      call: { tool_key: 'x', user_id: U1, cost: 1 },
    });
  });

  it('answers INVALID_ARGUMENT naming the problem, and consumes nothing when any descriptor is invalid', async () => {
    const org = await createTestOrg(api.db);
    await rule(org, { limit: 5 });
    const cases: [TestRequest, RegExp][] = [
      [{ domain: 'envoy', descriptors: [descriptor('x')] }, /domain must be mcp_tool_call/],
      [{ domain: '', descriptors: [descriptor('x')] }, /domain must be mcp_tool_call/],
      [{ descriptors: [] }, /at least one descriptor/],
      [{ descriptors: Array.from({ length: 101 }, () => descriptor('x')) }, /at most 100 descriptors/],
      [{ descriptors: [{ entries: [['user_id', U1]] }] }, /descriptors\[0\]: tool_key is required/],
      [{ descriptors: [{ entries: [] }] }, /descriptors\[0\]: tool_key is required/],
      [
        { descriptors: [descriptor('x', [['remote_address', '10.0.0.1']])] },
        /descriptors\[0\]\.entries\[1\]: unknown key "remote_address"/,
      ],
      [{ descriptors: [descriptor('x', [['', 'v']])] }, /unknown key ""/],
      [
        { descriptors: [descriptor('x', [['tool_key', 'y']])] },
        /descriptors\[0\]\.entries\[1\]: tool_key is given twice/,
      ],
      [
        { descriptors: [descriptor('x', [['user_id', 'not-a-uuid']])] },
        /descriptors\[0\]: user_id: user_id must be a uuid/,
      ],
      [
        {
          descriptors: [
            descriptor('x', [
              ['group', 'a'],
              ['group', ''],
            ]),
          ],
        },
        /descriptors\[0\]: group value 2: must not be empty/,
      ],
      [
        { descriptors: [descriptor('x', [['mcp_tag_id', 'nope']])] },
        /descriptors\[0\]: mcp_tag_id value 1: must be a uuid/,
      ],
      [{ descriptors: [descriptor('')] }, /descriptors\[0\]: tool_key: tool_key must not be empty/],
      [{ descriptors: [descriptor('x'.repeat(257))] }, /descriptors\[0\]: tool_key/],
      [{ descriptors: [descriptor('a\u0000b')] }, /descriptors\[0\]: tool_key/],
      [{ descriptors: [descriptor('x', [], 1001)] }, /descriptors\[0\]: hits_addend must be 1 to 1000/],
      [{ descriptors: [descriptor('x')], hitsAddend: 5000 }, /descriptors\[0\]: hits_addend must be 1 to 1000/],
      [
        { descriptors: [descriptor('x'), descriptor('x', [['agent_instance_id', 'x']])] },
        /descriptors\[1\]: agent_instance_id/,
      ],
    ];
    for (const [request, message] of cases) {
      const error = await failure(check(org, request));
      expect([message, error.code]).toEqual([message, GrpcStatus.INVALID_ARGUMENT]);
      expect(error.details).toMatch(message);
    }
    // Every call above had a valid first descriptor or none: the whole budget is still there.
    expect((await check(org, { descriptors: [descriptor('x')] })).statuses![0]!.limit_remaining).toBe(4);
  });

  it('authenticates by the authorization metadata: UNAUTHENTICATED without a known key, PERMISSION_DENIED without check_rate_limits', async () => {
    const org = await createTestOrg(api.db);
    await rule(org, { limit: 5 });
    const request = { descriptors: [descriptor('x')] };
    expect((await failure(rls.check(null, request))).code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect((await failure(rls.check('ghk_unknown0000000000000000000000000000', request))).code).toBe(
      GrpcStatus.UNAUTHENTICATED,
    );
    expect((await failure(rls.check(null, request, { authorization: 'Basic abc' }))).code).toBe(
      GrpcStatus.UNAUTHENTICATED,
    );
    const viewer = await org.key('member', ['view_rate_limits']);
    const denied = await failure(rls.check(viewer, request));
    expect(denied.code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(denied.details).toMatch(/check_rate_limits/);
    // Authentication comes first: a bad request from an unknown key is UNAUTHENTICATED.
    expect((await failure(rls.check(null, { domain: 'envoy', descriptors: [] }))).code).toBe(
      GrpcStatus.UNAUTHENTICATED,
    );
    // The key's organisation is the one checked, and the header is read as the HTTP API reads it.
    const checker = await org.key('member', ['check_rate_limits']);
    expect(
      (await rls.check(null, request, { authorization: `bearer   ${checker}` })).statuses![0]!.limit_remaining,
    ).toBe(4);
    expect((await rls.check((await createTestOrg(api.db)).member, request)).statuses).toEqual([{ code: 'OK' }]);
  });

  it('admits exactly the budget of 50 concurrent calls', async () => {
    const org = await createTestOrg(api.db);
    await rule(org, { limit: 17 });
    const answers = await Promise.all(Array.from({ length: 50 }, () => check(org, { descriptors: [descriptor('x')] })));
    expect(answers.filter((a) => a.overall_code === 'OK')).toHaveLength(17);
  });
});
