import type { RedisConnection } from '@gatehook/core/redis';
import { LRUCache } from 'lru-cache';
import { publishInvalidation, type InvalidationBus } from '@gatehook/cache/invalidation';
import type { RateLimitRule } from '@gatehook/core/rate-limit-rule-schema';
import { budgetOf, type Budget } from './budget';
import type { CounterLimit } from './consume';
import { compileCounterKey, type CounterKeyOf } from './counter-key';
import { compileScope, type ScopeMatcher } from './scope';

/** The invalidation topic (packages/cache) on which rule changes are announced; its keys are organisation ids. */
export const RULES_TOPIC = 'rate-limit-rules';

/**
 * Tells every process that an organisation's rules changed, so each drops its cached copy at once. Call it after
 * the change commits. When Redis is unreachable the message is lost; caches then refresh within their TTL.
 */
export function announceRulesChanged(redis: RedisConnection, prefix: string, orgId: string): Promise<void> {
  return publishInvalidation(redis, prefix, RULES_TOPIC, [orgId]);
}

/** Where rules come from: the active rules of an organisation, in rule order (created_at, then id). */
export type RuleSource = (orgId: string) => Promise<RateLimitRule[]>;

/** A rule ready for the hot path: its budget, compiled scope, counter limit and counter key. */
export interface CompiledRule {
  rule: RateLimitRule;
  budget: Budget;
  scope: ScopeMatcher;
  /** What the rule's counters admit (the budget and the action), shared by every check. */
  limit: CounterLimit;
  /** The call's counter key under this rule. */
  counterKey: CounterKeyOf;
}

/** The few logger methods the limiter uses (pino fits). */
export interface LimiterLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface RuleCacheOptions {
  source: RuleSource;
  /** Backstop when an invalidation message is lost (Redis down): rules are reloaded at least this often. */
  ttlMs?: number;
  /** After a failed load, how long the previous rules keep being used before the next try. */
  retryMs?: number;
  /** Most organisations kept; the least recently checked go first. */
  maxOrganisations?: number;
  logger?: LimiterLogger;
  now?: () => number;
}

interface Entry {
  rules: CompiledRule[];
  freshUntil: number;
}

/**
 * Compiled rules per organisation, in this process. A rule change anywhere is announced on the `rate-limit-rules`
 * topic of the process's InvalidationBus and marks the organisation's entry stale at once; the next check reloads
 * it. Past the TTL alone (the backstop for a lost announcement) the rules in force keep serving while they are
 * reloaded in the background. A load racing an invalidation is not cached as fresh (a generation counter tells), and
 * when a reload fails the previous rules stay in force rather than none.
 *
 * Not a ConfigCache (packages/cache): that one forgets an entry when it is invalidated, and this one must keep
 * the previous rules as the fallback while Postgres cannot be read. Entries are bounded by lru-cache all the same.
 */
export class RuleCache {
  private readonly entries: LRUCache<string, Entry>;
  private readonly generations = new Map<string, number>();
  private readonly loading = new Map<string, Promise<CompiledRule[]>>();
  private readonly failures = new Map<string, { until: number; error: unknown }>();
  private readonly ttlMs: number;
  private readonly retryMs: number;
  private readonly now: () => number;

  constructor(private readonly options: RuleCacheOptions) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.retryMs = options.retryMs ?? 1_000;
    this.now = options.now ?? Date.now;
    this.entries = new LRUCache<string, Entry>({ max: options.maxOrganisations ?? 100_000 });
  }

  /**
   * The organisation's rules when they may be used without a load, without a promise (the hot path's common case):
   * a fresh copy, or one past its TTL but not invalidated, which keeps serving while one reload runs in the
   * background (the TTL is the backstop for a lost invalidation, so no check waits on Postgres for it). After an
   * invalidation there are none until the reload: a rule change applies from the next check on.
   */
  cached(orgId: string): CompiledRule[] | undefined {
    const entry = this.entries.get(orgId);
    if (!entry) return undefined;
    if (this.now() < entry.freshUntil) return entry.rules;
    if (entry.freshUntil === 0) return undefined;
    if (!this.loading.has(orgId)) this.startLoad(orgId, entry).catch(() => undefined);
    return entry.rules;
  }

  /** The organisation's active rules, compiled. Throws only when they cannot be loaded and none are cached. */
  async rulesOf(orgId: string): Promise<CompiledRule[]> {
    const cached = this.cached(orgId);
    if (cached) return cached;
    const failure = this.failures.get(orgId);
    if (failure && this.now() < failure.until) throw failure.error;
    return this.loading.get(orgId) ?? this.startLoad(orgId, this.entries.get(orgId));
  }

  /** Forgets an organisation's rules: the next check reloads them. */
  invalidate(orgId: string): void {
    // Only organisations this process has seen (or is loading) carry a generation: the map stays bounded.
    if (this.entries.has(orgId) || this.loading.has(orgId))
      this.generations.set(orgId, (this.generations.get(orgId) ?? 0) + 1);
    const entry = this.entries.peek(orgId);
    if (entry) entry.freshUntil = 0;
  }

  /** Forgets every organisation's rules (after a pub/sub reconnect, messages may have been missed). */
  invalidateAll(): void {
    for (const orgId of this.entries.keys()) this.invalidate(orgId);
  }

  /** Follows rule changes announced by any process (and drops everything when the bus reconnects). */
  follow(bus: InvalidationBus): Promise<() => void> {
    return bus.listen(RULES_TOPIC, {
      onKeys: (orgIds) => {
        for (const orgId of orgIds) this.invalidate(orgId);
      },
      onReset: () => this.invalidateAll(),
    });
  }

  /** Loads an organisation's rules, once for every caller meanwhile. */
  private startLoad(orgId: string, previous: Entry | undefined): Promise<CompiledRule[]> {
    const load = this.load(orgId, previous).finally(() => this.loading.delete(orgId));
    this.loading.set(orgId, load);
    return load;
  }

  private async load(orgId: string, previous: Entry | undefined): Promise<CompiledRule[]> {
    const generation = this.generations.get(orgId) ?? 0;
    let rules: RateLimitRule[];
    try {
      rules = await this.options.source(orgId);
    } catch (error) {
      if (!previous) {
        // Nothing to fall back on: fail fast for retryMs instead of asking an unreachable Postgres on every call.
        this.failures.set(orgId, { until: this.now() + this.retryMs, error });
        throw error;
      }
      this.options.logger?.warn(
        { org_id: orgId, err: (error as Error).message },
        'rate limit rules could not be reloaded; the previous rules stay in force',
      );
      previous.freshUntil = this.now() + this.retryMs;
      return previous.rules;
    }
    this.failures.delete(orgId);
    const compiled = this.compile(orgId, rules);
    if ((this.generations.get(orgId) ?? 0) === generation) {
      this.entries.set(orgId, { rules: compiled, freshUntil: this.now() + this.ttlMs });
    } else {
      // Changed while loading: use what was read for this call, reload on the next.
      this.entries.set(orgId, { rules: compiled, freshUntil: 0 });
    }
    return compiled;
  }

  private compile(orgId: string, rules: readonly RateLimitRule[]): CompiledRule[] {
    const compiled: CompiledRule[] = [];
    for (const rule of rules) {
      try {
        const budget = budgetOf(rule);
        const limit = { calls: budget.calls, windowMs: budget.windowMs, deny: rule.action === 'deny' };
        compiled.push({
          rule,
          budget,
          scope: compileScope(rule.scope),
          limit,
          counterKey: compileCounterKey(rule.keyBy),
        });
      } catch (error) {
        // A stored condition that no longer compiles matches nothing (as for webhooks, SPEC 6.2.7): never widened.
        this.options.logger?.warn(
          { org_id: orgId, rule_id: rule.id, err: (error as Error).message },
          'rate limit rule scope does not compile; the rule matches nothing',
        );
      }
    }
    return compiled;
  }
}
