import type { LimiterLogger } from '../rule-cache';
import { MemoryCounterStore } from './memory';
import { CounterStoreTimeout } from './redis';
import type { CounterBatch, CounterStore, StoreDecision } from './store';

/** What the limiter does when it cannot decide: Redis unreachable in redis mode, or rules not loadable. */
export type FailMode = 'open' | 'closed';

/** Where a store decision came from: the store itself, or the fail-open counters of this process. */
export type StoreSource = 'memory' | 'redis' | 'fallback';

export interface FailoverOptions {
  /** Default open: a Redis outage falls back to counters in this process; closed denies instead. */
  failMode?: FailMode;
  /** After a Redis failure, how long checks use the fail mode before Redis is tried again. */
  retryStoreAfterMs?: number;
  logger?: LimiterLogger;
  now?: () => number;
  /** What the warning about the outage calls the counters (rate limit rules, management API throttling). */
  subject?: string;
}

/**
 * A counter store with the fail mode around it: memory decides synchronously; Redis is asked unless it failed in
 * the last `retryStoreAfterMs`, and when it fails (or is resting) fail-open decides with counters of this process
 * while fail-closed answers 'closed'.
 *
 * A check that timed out is not counted a second time: its script was sent and may still run in Redis (where it
 * then counts), so the fallback decides it without consuming. Checks after it, while Redis rests, are counted by
 * the fallback only; if the timed-out script never ran, that one call is counted nowhere.
 */
export class FailoverStore {
  private readonly failMode: FailMode;
  private readonly retryStoreAfterMs: number;
  private readonly now: () => number;
  private readonly fallback: MemoryCounterStore | null;
  private storeDownUntil = 0;

  constructor(
    readonly store: CounterStore,
    private readonly options: FailoverOptions = {},
  ) {
    this.failMode = options.failMode ?? 'open';
    this.retryStoreAfterMs = options.retryStoreAfterMs ?? 1_000;
    this.now = options.now ?? Date.now;
    this.fallback = store.kind === 'redis' && this.failMode === 'open' ? new MemoryCounterStore() : null;
  }

  get retryAfterMs(): number {
    return this.retryStoreAfterMs;
  }

  /** A decision (synchronous with the memory store), or 'closed' when Redis cannot decide and the mode is closed. */
  decide(
    batch: CounterBatch,
  ):
    | { result: StoreDecision; source: StoreSource }
    | 'closed'
    | Promise<{ result: StoreDecision; source: StoreSource } | 'closed'> {
    if (this.store.decide) return { result: this.store.decide(batch), source: this.store.kind };
    if (this.now() < this.storeDownUntil)
      return this.fallback ? { result: this.fallback.decide(batch), source: 'fallback' } : 'closed';
    return this.store.checkAndConsume(batch).then(
      (result) => ({ result, source: 'redis' as const }),
      (error: unknown) => {
        this.storeDownUntil = this.now() + this.retryStoreAfterMs;
        this.options.logger?.warn(
          { org_id: batch.orgId, err: (error as Error).message },
          `${this.options.subject ?? 'rate limit'} store unreachable; failing ${this.failMode} for ${this.retryStoreAfterMs} ms`,
        );
        if (!this.fallback) return 'closed' as const;
        const result =
          error instanceof CounterStoreTimeout ? this.fallback.preview(batch) : this.fallback.decide(batch);
        return { result, source: 'fallback' as const };
      },
    );
  }

  /** Releases the fallback counters; the store belongs to the caller. */
  async close(): Promise<void> {
    await this.fallback?.close();
  }
}
