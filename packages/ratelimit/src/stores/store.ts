import type { CounterLimit, CounterOutcome } from '../consume';

/**
 * One check's counters: `ids[i]` is the counter of the i-th matching rule (rule id and budget key, which starts
 * with `org=<id>`, so ids are unique across organisations).
 */
export interface CounterBatch {
  orgId: string;
  ids: readonly string[];
  limits: readonly CounterLimit[];
  cost: number;
}

/** What a store decided, with the clock it decided by (ms). */
export interface StoreDecision {
  now: number;
  allowed: boolean;
  outcomes: CounterOutcome[];
}

/**
 * Where counters live: `memory` (this process) or `redis` (shared by every process). Both run the same
 * check-and-consume, atomically over all the counters of one call.
 */
export interface CounterStore {
  readonly kind: 'memory' | 'redis';
  checkAndConsume(batch: CounterBatch): Promise<StoreDecision>;
  /** The same decision synchronously, for stores that need no I/O (memory). */
  decide?(batch: CounterBatch): StoreDecision;
  /** Releases timers and connections; safe to call twice. */
  close(): Promise<void>;
}
