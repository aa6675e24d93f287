// The rate limiter a gateway embeds and apps/api serves at POST /rate-limits/check: the organisation's active
// rules (cached), the ones whose scope matches the call, one atomic check-and-consume over their counters, and
// the decision of CONTRACT 8.

import type { RateLimitRule } from '@gatehook/core/rate-limit-rule-schema';
import { budgetKey, counterId } from './counter-key';
import type { CounterLimit } from './consume';
import type { CompiledRule, LimiterLogger, RuleCache } from './rule-cache';
import type { ToolCall } from './scope';
import { MemoryCounterStore } from './stores/memory';
import type { CounterStore, StoreDecision } from './stores/store';

/** What the limiter does when it cannot decide: Redis unreachable in redis mode, or rules not loadable. */
export type FailMode = 'open' | 'closed';

/** One matching rule's part of a decision. */
export interface RuleOutcome {
  rule: RateLimitRule;
  /** C, the calls admitted per derived window. */
  limit: number;
  remaining: number;
  /** ms since the epoch. */
  resetAt: number;
  exceeded: boolean;
}

/** Where a decision came from, for metrics and logs. */
export type DecisionSource = 'memory' | 'redis' | 'fallback' | 'fail_open' | 'fail_closed' | 'no_rules';

export interface Decision {
  allowed: boolean;
  retryAfterMs: number | null;
  deniedBy: string | null;
  rules: RuleOutcome[];
  source: DecisionSource;
}

/** A rule found out of budget, the first time in its window for this key (rate_limit.exceeded). */
export interface ExceededEvent {
  orgId: string;
  rule: RateLimitRule;
  /** The readable budget key, e.g. `org=…;user=…`. */
  key: string;
  call: ToolCall;
  /** Whether the call was denied (by this rule or another). */
  denied: boolean;
}

export interface RateLimiterOptions {
  rules: RuleCache;
  store: CounterStore;
  /** Default open: a Redis outage falls back to counters in this process; closed denies instead. */
  failMode?: FailMode;
  /** After a Redis failure, how long checks use the fail mode before Redis is tried again. */
  retryStoreAfterMs?: number;
  /** Called (not awaited) for each rate_limit.exceeded; errors are logged, never thrown into a check. */
  onExceeded?: (event: ExceededEvent) => Promise<unknown>;
  logger?: LimiterLogger;
  now?: () => number;
}

/** Checks tool calls against an organisation's rate limit rules. */
export class RateLimiter {
  private readonly failMode: FailMode;
  private readonly retryStoreAfterMs: number;
  private readonly now: () => number;
  private readonly fallback: MemoryCounterStore | null;
  private storeDownUntil = 0;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly warnedAt = new Map<string, number>();

  constructor(private readonly options: RateLimiterOptions) {
    this.failMode = options.failMode ?? 'open';
    this.retryStoreAfterMs = options.retryStoreAfterMs ?? 1_000;
    this.now = options.now ?? Date.now;
    this.fallback = options.store.kind === 'redis' && this.failMode === 'open' ? new MemoryCounterStore() : null;
  }

  /** Decides one call: allowed only if every matching deny rule has budget for its cost; consumes atomically. */
  async check(orgId: string, call: ToolCall): Promise<Decision> {
    let compiled = this.options.rules.cached(orgId);
    if (!compiled) {
      try {
        compiled = await this.options.rules.rulesOf(orgId);
      } catch (error) {
        this.warnThrottled(`rules:${orgId}`, { org_id: orgId, err: (error as Error).message }, `rate limit rules unavailable; failing ${this.failMode}`);
        return this.failMode === 'open'
          ? { allowed: true, retryAfterMs: null, deniedBy: null, rules: [], source: 'fail_open' }
          : { allowed: false, retryAfterMs: this.retryStoreAfterMs, deniedBy: null, rules: [], source: 'fail_closed' };
      }
    }

    const matching: CompiledRule[] = [];
    for (const entry of compiled) {
      const match = entry.scope.match(call);
      if (match.error) {
        this.warnThrottled(`condition:${entry.rule.id}`, { org_id: orgId, rule_id: entry.rule.id, err: match.error }, 'rate limit rule condition failed on a call; the rule does not match such calls');
      }
      if (match.matches) matching.push(entry);
    }
    if (matching.length === 0) return { allowed: true, retryAfterMs: null, deniedBy: null, rules: [], source: 'no_rules' };

    const keys = matching.map(({ rule }) => budgetKey(orgId, rule.keyBy, call));
    const limits: CounterLimit[] = matching.map(({ rule, budget }) => ({ calls: budget.calls, windowMs: budget.windowMs, deny: rule.action === 'deny' }));
    const { store } = this.options;
    const batch = { orgId, ids: matching.map(({ rule }, i) => counterId(rule.id, keys[i]!)), limits, cost: call.cost };

    // Memory counters decide synchronously: no promise on the default store's path.
    const decided = store.decide ? { result: store.decide(batch), source: store.kind } : await this.decide(orgId, batch);
    if (decided === 'closed') {
      const now = this.now();
      return {
        allowed: false,
        retryAfterMs: this.retryStoreAfterMs,
        deniedBy: null,
        rules: matching.map(({ rule, budget }) => ({ rule, limit: budget.calls, remaining: 0, resetAt: now + this.retryStoreAfterMs, exceeded: false })),
        source: 'fail_closed',
      };
    }
    const { result, source } = decided;

    const rules: RuleOutcome[] = matching.map(({ rule, budget }, i) => {
      const outcome = result.outcomes[i]!;
      return { rule, limit: budget.calls, remaining: outcome.remaining, resetAt: outcome.resetAt, exceeded: outcome.exceeded };
    });
    let deniedBy: string | null = null;
    let retryAfterMs: number | null = null;
    if (!result.allowed) {
      // Every exhausted deny rule must have budget again: wait for the last of their windows to end. A cost above
      // a rule's whole budget never fits, so no wait helps.
      let wait = 0;
      let fits = true;
      rules.forEach((outcome, i) => {
        if (!outcome.exceeded || outcome.rule.action !== 'deny') return;
        deniedBy ??= outcome.rule.id;
        if (call.cost > matching[i]!.budget.calls) fits = false;
        wait = Math.max(wait, outcome.resetAt - result.now);
      });
      retryAfterMs = fits ? Math.max(1, wait) : null;
    }

    if (this.options.onExceeded) {
      result.outcomes.forEach((outcome, i) => {
        if (outcome.firstExceeded) this.report({ orgId, rule: matching[i]!.rule, key: keys[i]!, call, denied: !result.allowed });
      });
    }
    return { allowed: result.allowed, retryAfterMs, deniedBy, rules, source };
  }

  private async decide(orgId: string, batch: Parameters<CounterStore['checkAndConsume']>[0]): Promise<{ result: StoreDecision; source: DecisionSource } | 'closed'> {
    const { store } = this.options;
    if (this.now() >= this.storeDownUntil) {
      try {
        return { result: await store.checkAndConsume(batch), source: 'redis' };
      } catch (error) {
        this.storeDownUntil = this.now() + this.retryStoreAfterMs;
        this.options.logger?.warn({ org_id: orgId, err: (error as Error).message }, `rate limit store unreachable; failing ${this.failMode} for ${this.retryStoreAfterMs} ms`);
      }
    }
    return this.fallback ? { result: this.fallback.decide(batch), source: 'fallback' } : 'closed';
  }

  // What goes wrong on the hot path goes wrong on every call: one warning per subject a minute, not one per call.
  private warnThrottled(subject: string, fields: Record<string, unknown>, message: string): void {
    const now = this.now();
    if ((this.warnedAt.get(subject) ?? -Infinity) > now - 60_000) return;
    this.warnedAt.set(subject, now);
    this.options.logger?.warn(fields, message);
  }

  private report(event: ExceededEvent): void {
    const done = this.options.onExceeded!(event)
      .catch((error: unknown) => this.options.logger?.warn({ org_id: event.orgId, rule_id: event.rule.id, err: (error as Error).message }, 'rate_limit.exceeded could not be recorded'))
      .finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  /** Resolves when every rate_limit.exceeded report started so far has settled (for shutdown and tests). */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Waits for pending reports and releases the fallback counters; the store and cache belong to the caller. */
  async close(): Promise<void> {
    await this.idle();
    await this.fallback?.close();
  }
}
