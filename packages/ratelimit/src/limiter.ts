// The rate limiter a gateway embeds and apps/api serves at POST /rate-limits/check: the organisation's active
// rules (cached), the ones whose scope matches the call, one atomic check-and-consume over their counters, and
// the decision of CONTRACT 8.

import type { RateLimitRule } from '@gatehook/core/rate-limit-rule-schema';
import { budgetKey } from './counter-key';
import type { CounterLimit } from './consume';
import type { CompiledRule, LimiterLogger, RuleCache } from './rule-cache';
import type { ToolCall } from './scope';
import { FailoverStore, type FailMode } from './stores/failover';
import type { CounterStore, StoreDecision } from './stores/store';

export type { FailMode } from './stores/failover';

/** One matching rule's part of a decision. */
export interface RuleOutcome {
  rule: RateLimitRule;
  /** C, the calls admitted per derived window. */
  limit: number;
  /** T in ms, the derived window. */
  windowMs: number;
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
  /** The clock the decision was made by (ms; Redis's with the redis store), against which `resetAt` counts. */
  now: number;
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
  private readonly counters: FailoverStore;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly warnedAt = new Map<string, number>();

  constructor(private readonly options: RateLimiterOptions) {
    this.failMode = options.failMode ?? 'open';
    this.retryStoreAfterMs = options.retryStoreAfterMs ?? 1_000;
    this.now = options.now ?? Date.now;
    this.counters = new FailoverStore(options.store, {
      failMode: this.failMode,
      retryStoreAfterMs: this.retryStoreAfterMs,
      now: this.now,
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  /** The counters' store (memory or redis), e.g. for other counters that must live where the rules' do. */
  get store(): CounterStore {
    return this.options.store;
  }

  /** Decides one call: allowed only if every matching deny rule has budget for its cost; consumes atomically. */
  async check(orgId: string, call: ToolCall): Promise<Decision> {
    return this.decide(orgId, call);
  }

  /**
   * {@link check} without a promise when the organisation's rules are cached and the store is memory (a gateway's
   * hot path, and the API's); otherwise a promise.
   */
  decide(orgId: string, call: ToolCall): Decision | Promise<Decision> {
    const compiled = this.options.rules.cached(orgId);
    if (compiled) return this.decideWith(orgId, call, compiled);
    return this.options.rules.rulesOf(orgId).then(
      (loaded) => this.decideWith(orgId, call, loaded),
      (error: unknown): Decision => {
        this.warnThrottled(
          `rules:${orgId}`,
          { org_id: orgId, err: (error as Error).message },
          `rate limit rules unavailable; failing ${this.failMode}`,
        );
        return this.failMode === 'open'
          ? { allowed: true, retryAfterMs: null, deniedBy: null, rules: [], source: 'fail_open', now: this.now() }
          : {
              allowed: false,
              retryAfterMs: this.retryStoreAfterMs,
              deniedBy: null,
              rules: [],
              source: 'fail_closed',
              now: this.now(),
            };
      },
    );
  }

  private decideWith(orgId: string, call: ToolCall, compiled: readonly CompiledRule[]): Decision | Promise<Decision> {
    const matching: CompiledRule[] = [];
    for (const entry of compiled) {
      const match = entry.scope.match(call);
      if (match.error) {
        this.warnThrottled(
          `condition:${entry.rule.id}`,
          { org_id: orgId, rule_id: entry.rule.id, err: match.error },
          'rate limit rule condition failed on a call; the rule does not match such calls',
        );
      }
      if (match.matches) matching.push(entry);
    }
    if (matching.length === 0)
      return { allowed: true, retryAfterMs: null, deniedBy: null, rules: [], source: 'no_rules', now: this.now() };

    const owners: string[] = new Array(matching.length);
    const keys: string[] = new Array(matching.length);
    const limits: CounterLimit[] = new Array(matching.length);
    for (let i = 0; i < matching.length; i += 1) {
      const entry = matching[i]!;
      owners[i] = entry.rule.id;
      keys[i] = entry.counterKey(call);
      limits[i] = entry.limit;
    }
    const decided = this.counters.decide({ orgId, owners, keys, limits, cost: call.cost });
    // Memory counters decide synchronously: no promise on the default store's path.
    return decided instanceof Promise
      ? decided.then((d) => this.toDecision(orgId, call, matching, d))
      : this.toDecision(orgId, call, matching, decided);
  }

  private toDecision(
    orgId: string,
    call: ToolCall,
    matching: readonly CompiledRule[],
    decided: { result: StoreDecision; source: DecisionSource } | 'closed',
  ): Decision {
    if (decided === 'closed') {
      const now = this.now();
      return {
        allowed: false,
        retryAfterMs: this.retryStoreAfterMs,
        deniedBy: null,
        rules: matching.map(({ rule, budget }) => ({
          rule,
          limit: budget.calls,
          windowMs: budget.windowMs,
          remaining: 0,
          resetAt: now + this.retryStoreAfterMs,
          exceeded: false,
        })),
        source: 'fail_closed',
        now,
      };
    }
    const { result, source } = decided;

    const rules: RuleOutcome[] = new Array(matching.length);
    let deniedBy: string | null = null;
    let retryAfterMs: number | null = null;
    // Every exhausted deny rule must have budget again: wait for the last of their windows to end. A cost above
    // a rule's whole budget never fits, so no wait helps.
    let wait = 0;
    let fits = true;
    for (let i = 0; i < matching.length; i += 1) {
      const { rule, budget } = matching[i]!;
      const outcome = result.outcomes[i]!;
      rules[i] = {
        rule,
        limit: budget.calls,
        windowMs: budget.windowMs,
        remaining: outcome.remaining,
        resetAt: outcome.resetAt,
        exceeded: outcome.exceeded,
      };
      if (!result.allowed && outcome.exceeded && rule.action === 'deny') {
        deniedBy ??= rule.id;
        if (call.cost > budget.calls) fits = false;
        wait = Math.max(wait, outcome.resetAt - result.now);
      }
      if (outcome.firstExceeded && this.options.onExceeded)
        this.report({ orgId, rule, key: budgetKey(orgId, rule.keyBy, call), call, denied: !result.allowed });
    }
    if (!result.allowed) retryAfterMs = fits ? Math.max(1, wait) : null;
    return { allowed: result.allowed, retryAfterMs, deniedBy, rules, source, now: result.now };
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
      .catch((error: unknown) =>
        this.options.logger?.warn(
          { org_id: event.orgId, rule_id: event.rule.id, err: (error as Error).message },
          'rate_limit.exceeded could not be recorded',
        ),
      )
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
    await this.counters.close();
  }
}
