import type { Principal } from '@gatehook/core/api-keys';
import { AppError } from '@gatehook/core/errors';
import { budgetOf } from '@gatehook/ratelimit/budget';
import type { CounterLimit } from '@gatehook/ratelimit/consume';
import type { LimiterLogger } from '@gatehook/ratelimit/rule-cache';
import { FailoverStore } from '@gatehook/ratelimit/stores/failover';
import type { CounterStore, StoreDecision } from '@gatehook/ratelimit/stores/store';

/** The owner of throttling counters in the store, next to the rules' (which own theirs by uuid). */
const THROTTLE_OWNER = ['api-key'] as const;

/** Routes CONTRACT 14 exempts: ingestion and checks, the gateway's hot paths, have budgets of their own. */
export const UNTHROTTLED_ROUTES: ReadonlySet<string> = new Set(['post /audit-events', 'post /rate-limits/check']);

export interface ThrottleOptions {
  /** API_RATE_LIMIT_PER_SECOND (> 0). */
  perSecond: number;
  /** API_RATE_LIMIT_BURST. */
  burst: number;
  /** Where the counters live: RATE_LIMIT_STORE's store (memory of this process, or Redis shared by every process). */
  store: CounterStore;
  logger?: LimiterLogger;
}

/**
 * Management API throttling per API key (CONTRACT 14) with the limiter's own budget and stores: a rule of
 * `perSecond` calls per second with `burst`, i.e. C = max(burst, perSecond) calls per window of C / perSecond
 * seconds (SPEC 2.5's burst rule). Over budget: 429 `rate_limited` with Retry-After in whole seconds until the
 * window ends. When Redis cannot answer, requests are counted in this process (fail open): management stays
 * available rather than locked.
 */
export class ManagementThrottle {
  private readonly limits: CounterLimit[];
  private readonly counters: FailoverStore;

  constructor(options: ThrottleOptions) {
    const budget = budgetOf({ limit: options.perSecond, windowSeconds: 1, burst: options.burst });
    this.limits = [{ calls: budget.calls, windowMs: budget.windowMs, deny: true }];
    this.counters = new FailoverStore(options.store, {
      failMode: 'open',
      subject: 'management API throttling',
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  /** Counts one request of the key; throws 429 when its budget is spent. Synchronous with the memory store. */
  admit(principal: Principal): void | Promise<void> {
    // Never a rule's counter: rules own their counters by their uuid.
    const decided = this.counters.decide({
      orgId: principal.orgId,
      owners: THROTTLE_OWNER,
      keys: [principal.keyId],
      limits: this.limits,
      cost: 1,
    });
    if (decided instanceof Promise) return decided.then((d) => this.verdict(d));
    this.verdict(decided);
  }

  private verdict(decided: { result: StoreDecision } | 'closed'): void {
    if (decided === 'closed' || decided.result.allowed) return;
    const { now, outcomes } = decided.result;
    const seconds = Math.max(1, Math.ceil((outcomes[0]!.resetAt - now) / 1000));
    throw new AppError('rate_limited', `Too many requests for this API key; retry in ${seconds} s`, undefined, {
      'retry-after': String(seconds),
    });
  }

  /** Releases the fallback counters; the store belongs to the caller. */
  close(): Promise<void> {
    return this.counters.close();
  }
}
