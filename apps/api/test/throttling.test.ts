import { createTestOrg, startTestApi, testConfig, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { auditEvent } from '@gatehook/testkit/stack';

// Management API throttling (CONTRACT 14): per API key, on the limiter's own budget and store, 429 rate_limited
// with Retry-After in whole seconds; ingestion and checks exempt; 0 turns it off.

jest.setTimeout(30_000);

// 2 per second with a burst of 5: C = 5 calls per window of 2.5 s.
const THROTTLE = { API_RATE_LIMIT_PER_SECOND: '2', API_RATE_LIMIT_BURST: '5' };

const list = (api: TestApi, key: string) => api.call('GET', '/rate-limits/rules', { key });

describe.each(['memory', 'redis'] as const)('with the %s store', (store) => {
  let api: TestApi;
  let org: TestOrg;
  beforeAll(async () => {
    api = await startTestApi({ env: { ...THROTTLE, RATE_LIMIT_STORE: store }, queues: false });
    org = await createTestOrg(api.db);
  });
  afterAll(() => api.close());

  it('answers 429 rate_limited with Retry-After in whole seconds once a key spends its burst, per key', async () => {
    const key = await org.key('member', ['view_rate_limits', 'check_rate_limits', 'ingest_events']);
    for (let i = 0; i < 5; i += 1) expect((await list(api, key)).status).toBe(200);
    const throttled = await list(api, key);
    expect(throttled.status).toBe(429);
    expect(throttled.body).toEqual({ error: { code: 'rate_limited', message: expect.any(String) } });
    const retryAfter = throttled.headers.get('retry-after')!;
    expect(retryAfter).toMatch(/^[0-9]+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(3);
    // Any route but the exempt ones, forbidden ones included.
    expect((await api.call('POST', '/webhooks', { key, body: {} })).status).toBe(429);

    // Exempt: checks and ingestion go on with the same key.
    const check = await api.call('POST', '/rate-limits/check', { key, body: { tool_key: 'search' } });
    expect(check.status).toBe(200);
    const ingested = await api.call('POST', '/audit-events', { key, body: auditEvent() });
    expect(ingested.status).toBe(202);

    // Another key of the same organisation has a budget of its own.
    expect((await list(api, org.admin)).status).toBe(200);

    // Once the window ends, the key is served again.
    const deadline = Date.now() + Number(retryAfter) * 1000 + 1000;
    let status = 429;
    while (status === 429 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await list(api, key)).status;
    }
    expect(status).toBe(200);
  });

  it('never throttles requests without a valid key (they are 401, counted against nobody)', async () => {
    for (let i = 0; i < 8; i += 1) expect((await api.call('GET', '/rate-limits/rules')).status).toBe(401);
  });
});

describe('with the redis store, every API process counts against one budget', () => {
  it("spends a key's burst across two processes", async () => {
    const config = testConfig({ ...THROTTLE, RATE_LIMIT_STORE: 'redis' });
    const [one, two] = await Promise.all([
      startTestApi({ config, queues: false }),
      startTestApi({ config, queues: false }),
    ]);
    try {
      const org = await createTestOrg(one.db);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i += 1)
        statuses.push((await list(one, org.admin)).status, (await list(two, org.admin)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});

describe('API_RATE_LIMIT_PER_SECOND=0', () => {
  it('turns throttling off', async () => {
    const api = await startTestApi({
      env: { API_RATE_LIMIT_PER_SECOND: '0', API_RATE_LIMIT_BURST: '1' },
      queues: false,
    });
    try {
      const org = await createTestOrg(api.db);
      const statuses = await Promise.all(Array.from({ length: 30 }, () => list(api, org.admin).then((r) => r.status)));
      expect(new Set(statuses)).toEqual(new Set([200]));
    } finally {
      await api.close();
    }
  });
});
