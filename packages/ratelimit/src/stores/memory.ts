import { checkAndConsume, type CounterState } from '../consume';
import type { CounterBatch, CounterStore, StoreDecision } from './store';

/** Default ceiling on one organisation's live counters (RATE_LIMIT_MEMORY_COUNTERS_PER_ORG). */
export const MEMORY_COUNTERS_PER_ORG = 100_000;
/** Default ceiling on the process's live counters (RATE_LIMIT_MEMORY_COUNTERS). */
export const MEMORY_COUNTERS = 1_000_000;

export interface MemoryStoreOptions {
  /** The clock (ms); tests drive window roll-over with their own. */
  now?: () => number;
  /** How often idle counters are dropped. */
  sweepIntervalMs?: number;
  /** Hard ceiling on live counters of the process. */
  maxCounters?: number;
  /** Hard ceiling on live counters of one organisation; past it that organisation's oldest windows go first. */
  maxCountersPerOrg?: number;
}

interface Entry extends CounterState {
  expiresAt: number;
}

/**
 * Counters in this process (the default store, SPEC 1.3: with several replicas the effective ceiling is the limit
 * times the replica count). Checks are synchronous inside, so each is atomic over its counters. Growth is
 * bounded: a counter whose window has ended carries no information (the next call opens a new window), so a
 * sweep drops it; and the counters are capped per organisation and per process against a flood of distinct keys.
 * Eviction only ever takes counters of the organisation that is adding one: a tenant flooding distinct tool keys
 * resets its own budgets, never another tenant's.
 */
export class MemoryCounterStore implements CounterStore {
  readonly kind = 'memory' as const;
  /** Per organisation, counters in roughly oldest-window-first order (a new window moves to the end). */
  private readonly orgs = new Map<string, Map<string, Entry>>();
  private total = 0;
  private readonly now: () => number;
  private readonly maxCounters: number;
  private readonly maxCountersPerOrg: number;
  private readonly timer: NodeJS.Timeout;

  constructor(options: MemoryStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.maxCounters = options.maxCounters ?? MEMORY_COUNTERS;
    this.maxCountersPerOrg = options.maxCountersPerOrg ?? MEMORY_COUNTERS_PER_ORG;
    this.timer = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 5_000);
    this.timer.unref();
  }

  /** Live counters, for metrics and tests. */
  get size(): number {
    return this.total;
  }

  /** Live counters of one organisation. */
  sizeOf(orgId: string): number {
    return this.orgs.get(orgId)?.size ?? 0;
  }

  async checkAndConsume(batch: CounterBatch): Promise<StoreDecision> {
    return this.decide(batch);
  }

  /** The same decision without a promise, for a gateway's hot path. */
  decide(batch: CounterBatch): StoreDecision {
    const now = this.now();
    let counters = this.orgs.get(batch.orgId);
    if (!counters) {
      counters = new Map();
      this.orgs.set(batch.orgId, counters);
    }
    const { ids } = batch;
    const states: (Entry | undefined)[] = new Array(ids.length);
    for (let i = 0; i < ids.length; i += 1) states[i] = counters.get(ids[i]!);
    const result = checkAndConsume(states, batch.limits, batch.cost, now);
    let added = false;
    for (let i = 0; i < ids.length; i += 1) {
      const write = result.writes[i];
      if (!write) continue;
      const previous = states[i];
      if (previous && previous.start === write.start) {
        // Same window: update in place, no second hash of the key.
        previous.used = write.used;
        previous.reported = write.reported;
        continue;
      }
      // A new window moves the counter to the end of its map, so each map stays roughly oldest-window first.
      if (previous) counters.delete(ids[i]!);
      else {
        this.total += 1;
        added = true;
      }
      counters.set(ids[i]!, { start: write.start, used: write.used, reported: write.reported, expiresAt: write.start + batch.limits[i]!.windowMs });
    }
    if (added) this.bound(counters, ids.length);
    return { now, allowed: result.allowed, outcomes: result.outcomes };
  }

  // Past either ceiling, the adding organisation's oldest windows go, never another organisation's. The counters
  // of the call just decided are the newest and stay: with many organisations each below its own ceiling, the
  // process may hold up to one call's counters more than maxCounters.
  private bound(counters: Map<string, Entry>, justWritten: number): void {
    const overOrg = counters.size - this.maxCountersPerOrg;
    const overTotal = Math.min(this.total - this.maxCounters, counters.size - justWritten);
    let evict = Math.max(overOrg, overTotal);
    if (evict <= 0) return;
    for (const key of counters.keys()) {
      if (evict-- <= 0) break;
      counters.delete(key);
      this.total -= 1;
    }
  }

  /**
   * The decision this store would make, without consuming or remembering anything: for a call that may already
   * have been counted elsewhere (a timed-out Redis script that may still run).
   */
  preview(batch: CounterBatch): StoreDecision {
    const now = this.now();
    const counters = this.orgs.get(batch.orgId);
    const states = batch.ids.map((id) => counters?.get(id));
    const result = checkAndConsume(states, batch.limits, batch.cost, now);
    // What the call would leave; whether it was reported is Redis's to say if the script ran there.
    const outcomes = result.outcomes.map((outcome) => ({ ...outcome, firstExceeded: false }));
    return { now, allowed: result.allowed, outcomes };
  }

  /** Drops every counter whose window has ended. */
  sweep(): void {
    const now = this.now();
    for (const [orgId, counters] of this.orgs) {
      for (const [key, entry] of counters) {
        if (now >= entry.expiresAt) {
          counters.delete(key);
          this.total -= 1;
        }
      }
      if (counters.size === 0) this.orgs.delete(orgId);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.orgs.clear();
    this.total = 0;
  }
}
