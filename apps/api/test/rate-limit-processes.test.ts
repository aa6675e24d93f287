import { randomBytes } from 'node:crypto';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '@gatehook/testkit/env';
import { startRedisServer, startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';
import { createDb } from '@gatehook/db/client';

// Real API processes: with RATE_LIMIT_STORE=redis two replicas share one budget; with memory each keeps its own
// (SPEC 1.3: the effective ceiling is the limit times the replica count). And what a check does when Redis goes.

jest.setTimeout(90_000);

async function post(port: number, path: string, key: string, body: unknown) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: path.includes('rules/') ? 'PATCH' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe('two API processes', () => {
  const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
  afterAll(() => db.$disconnect());

  async function replicas(store: 'memory' | 'redis'): Promise<ServiceProcess[]> {
    const env = {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `test_${randomBytes(6).toString('hex')}`,
      RATE_LIMIT_STORE: store,
      NODE_ENV: 'test',
      // The shared count is asserted: a Redis check slower than the 250 ms default fails open by design (counted in
      // its process only; stores/failover.test.ts), which a loaded machine's first calls can reach.
      RATE_LIMIT_REDIS_TIMEOUT_MS: '5000',
    };
    return Promise.all([startServiceProcess('api', env), startServiceProcess('api', env)]);
  }

  async function allowedOf(processes: ServiceProcess[], org: TestOrg, perProcess: number): Promise<number> {
    let allowed = 0;
    await Promise.all(
      processes.map(async (p) => {
        for (let i = 0; i < perProcess; i += 1) {
          const decision = await post(p.port, '/rate-limits/check', org.member, { tool_key: 'search' });
          expect(decision.status).toBe(200);
          if (decision.body.allowed) allowed += 1;
        }
      }),
    );
    return allowed;
  }

  it.each([
    ['redis', 20],
    ['memory', 30],
  ] as const)(
    'with the %s store, 15 calls to each of two replicas under a limit of 20 admit %i',
    async (store, expected) => {
      const processes = await replicas(store);
      try {
        const org = await createTestOrg(db);
        const created = await post(processes[0]!.port, '/rate-limits/rules', org.admin, {
          name: 'ceiling',
          scope: { type: 'mcp_tool_call' },
          key_by: ['org'],
          limit: 20,
          window_seconds: 60,
        });
        expect(created.status).toBe(201);
        expect(await allowedOf(processes, org, 15)).toBe(expected);

        // A rule change made through one replica reaches the other within a second.
        const changed = await post(processes[0]!.port, `/rate-limits/rules/${created.body.id}`, org.admin, {
          limit: 50,
        });
        expect(changed.status).toBe(200);
        const deadline = Date.now() + 1000;
        let seen = 0;
        while (Date.now() < deadline) {
          const decision = await post(processes[1]!.port, '/rate-limits/check', org.member, { tool_key: 'search' });
          seen = decision.body.rules[0].limit;
          if (seen === 50) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(seen).toBe(50);
      } finally {
        await Promise.all(processes.map((p) => p.kill('SIGTERM')));
      }
    },
  );
});

describe('when Redis is unreachable (RATE_LIMIT_STORE=redis)', () => {
  async function stackWith(failMode: 'open' | 'closed') {
    const redis = await startRedisServer();
    const api = await startTestApi({
      env: {
        REDIS_URL: redis.url,
        RATE_LIMIT_STORE: 'redis',
        RATE_LIMIT_FAIL_MODE: failMode,
        RATE_LIMIT_REDIS_TIMEOUT_MS: '200',
      },
      queues: false,
    });
    const org = await createTestOrg(api.db);
    const created = await api.call('POST', '/rate-limits/rules', {
      key: org.admin,
      body: { name: 'r', scope: { type: 'mcp_tool_call' }, key_by: ['org'], limit: 3, window_seconds: 60 },
    });
    expect(created.status).toBe(201);
    return { redis, api, org, ruleId: created.body.id as string };
  }

  const check = (api: TestApi, org: TestOrg) =>
    api.call('POST', '/rate-limits/check', { key: org.member, body: { tool_key: 'search' } });

  it('fails open by default: a local counter in this process keeps enforcing the rule', async () => {
    const { redis, api, org, ruleId } = await stackWith('open');
    try {
      expect((await check(api, org)).body.allowed).toBe(true);
      await redis.close();
      const decisions = [];
      for (let i = 0; i < 4; i += 1) decisions.push(await check(api, org));
      expect(decisions.map((d) => d.status)).toEqual([200, 200, 200, 200]);
      // The fallback counter starts empty (the shared count is out of reach): 3 admitted, then denied.
      expect(decisions.map((d) => d.body.allowed)).toEqual([true, true, true, false]);
      expect(decisions[3]!.body.denied_by).toBe(ruleId);
      const metrics = (await api.call('GET', '/metrics')).text;
      expect(metrics).toMatch(
        /gatehook_rate_limit_decisions_total\{outcome="allowed",source="redis",interface="http"\} 1/,
      );
      expect(metrics).toMatch(
        /gatehook_rate_limit_decisions_total\{outcome="allowed",source="fallback",interface="http"\} 3/,
      );
    } finally {
      await api.close();
      await redis.close();
    }
  });

  it('fails closed when configured: every matching call is denied, by no rule, with a retry time', async () => {
    const { redis, api, org } = await stackWith('closed');
    try {
      expect((await check(api, org)).body.allowed).toBe(true);
      await redis.close();
      const denied = await check(api, org);
      expect(denied.status).toBe(200);
      expect(denied.body).toMatchObject({ allowed: false, denied_by: null, retry_after_ms: 1000 });
      expect(denied.body.rules).toHaveLength(1);
    } finally {
      await api.close();
      await redis.close();
    }
  });
});
