import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { ruleScopeSchema, type RateLimitRule } from '@gatehook/core/rate-limit-rule-schema';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { waitFor } from '@gatehook/testkit/until';
import { InvalidationBus } from '@gatehook/cache/invalidation';
import { announceRulesChanged, RuleCache, type RuleSource } from './rule-cache';

const ORG = randomUUID();
const rule = (name: string, fields: Partial<RateLimitRule> = {}): RateLimitRule => ({
  id: randomUUID(),
  orgId: ORG,
  name,
  description: null,
  status: 'active',
  scope: ruleScopeSchema.parse({ type: 'mcp_tool_call' }),
  keyBy: ['org'],
  limit: 10,
  windowSeconds: 60,
  burst: 1,
  action: 'deny',
  createdAt: new Date(),
  updatedAt: new Date(),
  ...fields,
});

// A rule source the test controls: what it returns, whether it fails, and when a load completes.
function source() {
  const state = { rules: [rule('a')], fail: false, loads: 0, gate: null as Promise<void> | null };
  const load: RuleSource = async () => {
    state.loads += 1;
    if (state.gate) await state.gate;
    if (state.fail) throw new Error('postgres down');
    return state.rules;
  };
  return { state, load };
}

describe('RuleCache', () => {
  let clock = 0;
  const now = () => clock;

  it('serves the cached rules until invalidated or the TTL passes, loading once for concurrent callers', async () => {
    const { state, load } = source();
    const cache = new RuleCache({ source: load, ttlMs: 10_000, now });
    const [x, y] = await Promise.all([cache.rulesOf(ORG), cache.rulesOf(ORG)]);
    expect(x).toBe(y);
    expect(state.loads).toBe(1);
    expect(cache.cached(ORG)).toBe(x);
    clock += 9_999;
    await cache.rulesOf(ORG);
    expect(state.loads).toBe(1);
    clock += 1;
    await cache.rulesOf(ORG);
    expect(state.loads).toBe(2);
    await waitFor(() => cache.cached(ORG) !== x);
    cache.invalidate(ORG);
    expect(cache.cached(ORG)).toBeUndefined();
    state.rules = [rule('b')];
    expect((await cache.rulesOf(ORG)).map((c) => c.rule.name)).toEqual(['b']);
  });

  it('past its TTL keeps serving the rules in force while one background reload runs; after a change it waits', async () => {
    const { state, load } = source();
    const cache = new RuleCache({ source: load, ttlMs: 10_000, now });
    const first = await cache.rulesOf(ORG);
    let open!: () => void;
    state.gate = new Promise((resolve) => (open = resolve));
    state.rules = [rule('reloaded')];
    clock += 10_000;
    // No check waits on the reload the TTL asks for: the rules in force answer at once, synchronously.
    expect(cache.cached(ORG)).toBe(first);
    expect(cache.cached(ORG)).toBe(first);
    expect(await cache.rulesOf(ORG)).toBe(first);
    expect(state.loads).toBe(2);
    open();
    await waitFor(() => cache.cached(ORG)?.[0]?.rule.name === 'reloaded');
    expect(state.loads).toBe(2);

    // An announced change is different: the next check waits for the new rules.
    state.gate = new Promise((resolve) => (open = resolve));
    state.rules = [rule('changed')];
    cache.invalidate(ORG);
    expect(cache.cached(ORG)).toBeUndefined();
    const next = cache.rulesOf(ORG);
    open();
    expect((await next).map((c) => c.rule.name)).toEqual(['changed']);
  });

  it('does not cache as fresh a load that raced an invalidation', async () => {
    const { state, load } = source();
    const cache = new RuleCache({ source: load, now });
    let open!: () => void;
    state.gate = new Promise((resolve) => (open = resolve));
    const pending = cache.rulesOf(ORG);
    cache.invalidate(ORG); // the change lands while the old rules are being read
    open();
    expect((await pending).map((c) => c.rule.name)).toEqual(['a']);
    state.gate = null;
    state.rules = [rule('changed')];
    expect((await cache.rulesOf(ORG)).map((c) => c.rule.name)).toEqual(['changed']);
  });

  it('keeps the previous rules in force when a reload fails, and throws only with nothing cached', async () => {
    const { state, load } = source();
    const cache = new RuleCache({ source: load, retryMs: 1_000, now });
    await cache.rulesOf(ORG);
    cache.invalidate(ORG);
    state.fail = true;
    expect((await cache.rulesOf(ORG)).map((c) => c.rule.name)).toEqual(['a']);
    // Not retried on every call: the previous rules serve for retryMs.
    const loads = state.loads;
    await cache.rulesOf(ORG);
    expect(state.loads).toBe(loads);
    const fresh = randomUUID();
    await expect(cache.rulesOf(fresh)).rejects.toThrow('postgres down');
    // With nothing cached the failure is remembered for retryMs: no query per call against a database that is down.
    const before = state.loads;
    await expect(cache.rulesOf(fresh)).rejects.toThrow('postgres down');
    expect(state.loads).toBe(before);
    clock += 1_000;
    state.fail = false;
    expect((await cache.rulesOf(fresh)).map((c) => c.rule.name)).toEqual(['a']);
  });

  it('skips a stored rule whose condition no longer compiles, keeping the others', async () => {
    const { state, load } = source();
    state.rules = [
      rule('broken', { scope: { ...ruleScopeSchema.parse({ type: 'mcp_tool_call' }), condition: 'call.nope' } }),
      rule('fine'),
    ];
    const warnings: string[] = [];
    const cache = new RuleCache({ source: load, now, logger: { warn: (_f, message) => warnings.push(message) } });
    expect((await cache.rulesOf(ORG)).map((c) => c.rule.name)).toEqual(['fine']);
    expect(warnings).toEqual([expect.stringMatching(/does not compile/)]);
  });

  it('drops an organisation when its change is announced on Redis', async () => {
    const prefix = `test_${randomBytes(6).toString('hex')}`;
    const bus = new InvalidationBus(new Redis(TEST_REDIS_URL), prefix);
    const publisher = new Redis(TEST_REDIS_URL);
    try {
      const { load } = source();
      const cache = new RuleCache({ source: load });
      const stop = await cache.follow(bus);
      const other = randomUUID();
      await cache.rulesOf(ORG);
      await cache.rulesOf(other);
      await announceRulesChanged(publisher, prefix, ORG);
      const deadline = Date.now() + 1000;
      while (cache.cached(ORG) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(cache.cached(ORG)).toBeUndefined();
      expect(cache.cached(other)).toBeDefined();
      stop();
    } finally {
      await bus.close();
      publisher.disconnect();
    }
  });
});
