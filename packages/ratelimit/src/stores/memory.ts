import { checkAndConsume, type CounterState } from '../consume';
import type { CounterBatch, CounterStore, StoreDecision } from './store';

export interface MemoryStoreOptions {
  /** The clock (ms); tests drive window roll-over with their own. */
  now?: () => number;
  /** How often idle counters are dropped. */
  sweepIntervalMs?: number;
  /** Hard ceiling on live counters; past it the oldest windows are dropped first. */
  maxCounters?: number;
}

interface Entry extends CounterState {
  expiresAt: number;
}

/**
 * Counters in this process (the default store, SPEC 1.3: with several replicas the effective ceiling is the limit
 * times the replica count). Checks are synchronous inside, so each is atomic over its counters. Growth is
 * bounded: a counter whose window has ended carries no information (the next call opens a new window), so a
 * sweep drops it; and `maxCounters` caps the map against a flood of distinct keys.
 */
export class MemoryCounterStore implements CounterStore {
  readonly kind = 'memory' as const;
  private readonly counters = new Map<string, Entry>();
  private readonly now: () => number;
  private readonly maxCounters: number;
  private readonly timer: NodeJS.Timeout;

  constructor(options: MemoryStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.maxCounters = options.maxCounters ?? 1_000_000;
    this.timer = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 5_000);
    this.timer.unref();
  }

  /** Live counters, for metrics and tests. */
  get size(): number {
    return this.counters.size;
  }

  async checkAndConsume(batch: CounterBatch): Promise<StoreDecision> {
    return this.decide(batch);
  }

  /** The same decision without a promise, for a gateway's hot path. */
  decide(batch: CounterBatch): StoreDecision {
    const now = this.now();
    // A counter id holds the rule id and a budget key that starts with org=<id>: unique across organisations.
    const states = batch.ids.map((key) => this.counters.get(key));
    const result = checkAndConsume(states, batch.limits, batch.cost, now);
    result.writes.forEach((write, i) => {
      if (!write) return;
      const previous = states[i];
      if (previous && previous.start === write.start) {
        // Same window: update in place, no second hash of the key.
        previous.used = write.used;
        previous.reported = write.reported;
        return;
      }
      // A new window moves the counter to the end of the map, so the map stays roughly oldest-window first.
      if (previous) this.counters.delete(batch.ids[i]!);
      this.counters.set(batch.ids[i]!, { ...write, expiresAt: write.start + batch.limits[i]!.windowMs });
    });
    if (this.counters.size > this.maxCounters) this.evictOldest(this.counters.size - this.maxCounters);
    return { now, allowed: result.allowed, outcomes: result.outcomes };
  }

  /** Drops every counter whose window has ended. */
  sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.counters) if (now >= entry.expiresAt) this.counters.delete(key);
  }

  private evictOldest(count: number): void {
    let left = count;
    for (const key of this.counters.keys()) {
      if (left-- <= 0) break;
      this.counters.delete(key);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.counters.clear();
  }
}
