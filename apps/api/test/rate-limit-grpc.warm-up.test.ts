import { createLogger } from '@gatehook/core/logger';
import { warmUpGrpc } from '@gatehook/api/grpc/warm-up';
import { warmCheckQueries } from '@gatehook/api/services/rate-limit-check';
import type { CounterStore } from '@gatehook/ratelimit/stores/store';
import { waitFor } from '@gatehook/testkit/until';
import { createTestOrg, createTestRule, startTestApi, type TestApi } from '@gatehook/testkit/api';
import { descriptor, rlsClient } from './envoy-rls-client';

// The boot-time warm-up of the gRPC check path (docs/rate-limits.md "Warm-up at start"): it runs its calls through
// the real server and check code, counts in the process's store under a private organisation, and touches nothing
// of any other.

const logger = createLogger({ name: 'warm-up-test', level: 'silent' });

describe('the gRPC warm-up', () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi({ env: { RATE_LIMIT_STORE: 'redis' }, queues: false, grpc: true });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('answers every call it makes (allowed, denied and refused ones), within its bounds', async () => {
    const warmed = await warmUpGrpc({ logger, calls: 500 });
    expect(warmed).toEqual({ calls: 500, failed: 0, ms: expect.any(Number) });
  });

  it('stops at its time bound whatever the number of calls', async () => {
    const warmed = await warmUpGrpc({ logger, calls: Number.MAX_SAFE_INTEGER, maxMs: 300 });
    // It returns (the calls in flight at the bound finish, and the server closes) long before it could make them all.
    expect(warmed.calls).toBeGreaterThan(0);
    expect(warmed.calls).toBeLessThan(Number.MAX_SAFE_INTEGER);
    // It stopped because the bound passed (its calls could not run out): no earlier.
    expect(warmed.ms).toBeGreaterThanOrEqual(300);
    expect(warmed.failed).toBe(0);
  });

  it("counts in the process's store under a private organisation whose counters expire, and leaves every other organisation's counters alone", async () => {
    const org = await createTestOrg(api.db);
    await createTestRule(api, org, { limit: 5 });
    const rls = rlsClient(api.grpcPort);
    const counters = `${api.config.REDIS_PREFIX}:rl:*`;
    try {
      const before = await rls.check(org.member, { descriptors: [descriptor('github.create_issue')] });
      expect(before.statuses![0]!.limit_remaining).toBe(4);
      const keys = (await api.redis.keys(counters)).sort();

      // The process's Redis store, counted on the way through.
      const store = api.limiter.store;
      const organisations = new Set<string>();
      const counting: CounterStore = {
        kind: store.kind,
        checkAndConsume: (batch) => {
          organisations.add(batch.orgId);
          return store.checkAndConsume(batch);
        },
        close: async () => undefined,
      };
      const warmed = await warmUpGrpc({ logger, calls: 300, store: counting });
      expect(warmed.failed).toBe(0);
      expect(organisations.size).toBeGreaterThan(1);
      expect(organisations.has(org.orgId)).toBe(false);

      const after = await rls.check(org.member, { descriptors: [descriptor('github.create_issue')] });
      expect(after.statuses![0]!.limit_remaining).toBe(3);
      // The warm-up's own counters go by themselves (one-second windows); the others are as they were.
      await waitFor(async () => (await api.redis.keys(counters)).sort().join() === keys.join(), {
        what: "the warm-up's counters expired",
      });
    } finally {
      rls.close();
    }
  });

  it("runs the check's key and rule reads at start, for a key and an organisation that do not exist", async () => {
    await expect(warmCheckQueries(api.db)).resolves.toBe(true);
  });
});
