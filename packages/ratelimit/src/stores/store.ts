import type { CounterLimit, CounterOutcome } from '../consume';

/**
 * One check's counters, all of one organisation: the i-th is `owners[i]`'s counter `keys[i]` (a rule's id and the
 * call's counter key under it, see counter-key.ts; or another owner such as `api-key`).
 */
export interface CounterBatch {
  orgId: string;
  owners: readonly string[];
  keys: readonly string[];
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
