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

/** One organisation's counters: per owner (a rule), per counter key, in roughly oldest-window-first order. */
interface OrgCounters {
  size: number;
  owners: Map<string, Map<string, Entry>>;
}

/**
 * Counters in this process (the default store, SPEC 1.3: with several replicas the effective ceiling is the limit
 * times the replica count). Checks are synchronous inside, so each is atomic over its counters. Counters sit in
 * nested maps (organisation → rule → counter key), indexed by strings a check already holds: no key is built per
 * check. Growth is bounded: a counter whose window has ended carries no information (the next call opens a new
 * window), so a sweep drops it; and the counters are capped per organisation and per process against a flood of
 * distinct keys. Eviction only ever takes counters of the organisation that is adding one: a tenant flooding
 * distinct tool keys resets its own budgets, never another tenant's.
 */
export class MemoryCounterStore implements CounterStore {
  readonly kind = 'memory' as const;
  private readonly orgs = new Map<string, OrgCounters>();
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
    let org = this.orgs.get(batch.orgId);
    if (!org) {
      org = { size: 0, owners: new Map() };
      this.orgs.set(batch.orgId, org);
    }
    const { owners, keys } = batch;
    const n = owners.length;
    const maps: Map<string, Entry>[] = new Array(n);
    const states: (Entry | undefined)[] = new Array(n);
    for (let i = 0; i < n; i += 1) {
      let counters = org.owners.get(owners[i]!);
      if (!counters) {
        counters = new Map();
        org.owners.set(owners[i]!, counters);
      }
      maps[i] = counters;
      states[i] = counters.get(keys[i]!);
    }
    const result = checkAndConsume(states, batch.limits, batch.cost, now);
    let added = false;
    for (let i = 0; i < n; i += 1) {
      const write = result.writes[i];
      if (!write) continue;
      const previous = states[i];
      if (previous && previous.start === write.start) {
        // Same window: update in place.
        previous.used = write.used;
        previous.reported = write.reported;
        continue;
      }
      // A new window moves the counter to the end of its map, so each map stays roughly oldest-window first.
      if (previous) maps[i]!.delete(keys[i]!);
      else {
        org.size += 1;
        this.total += 1;
        added = true;
      }
      maps[i]!.set(keys[i]!, {
        start: write.start,
        used: write.used,
        reported: write.reported,
        expiresAt: write.start + batch.limits[i]!.windowMs,
      });
    }
    if (added) this.bound(org, n);
    return { now, allowed: result.allowed, outcomes: result.outcomes };
  }

  // Past either ceiling, the adding organisation's oldest windows go, never another organisation's: from its
  // largest map first (the one a flood of distinct keys grows). The newest counter of each map stays, so the
  // counters of the call just decided do: with many organisations each below its own ceiling, the process may
  // hold up to one call's counters more than maxCounters.
  private bound(org: OrgCounters, justWritten: number): void {
    let evict = Math.max(
      org.size - this.maxCountersPerOrg,
      Math.min(this.total - this.maxCounters, org.size - justWritten),
    );
    while (evict > 0) {
      let largest: Map<string, Entry> | undefined;
      for (const counters of org.owners.values()) if (!largest || counters.size > largest.size) largest = counters;
      if (!largest || largest.size <= 1) return;
      let take = Math.min(evict, largest.size - 1);
      evict -= take;
      for (const key of largest.keys()) {
        if (take-- <= 0) break;
        largest.delete(key);
        org.size -= 1;
        this.total -= 1;
      }
    }
  }

  /**
   * The decision this store would make, without consuming or remembering anything: for a call that may already
   * have been counted elsewhere (a timed-out Redis script that may still run).
   */
  preview(batch: CounterBatch): StoreDecision {
    const now = this.now();
    const org = this.orgs.get(batch.orgId);
    const states = batch.owners.map((owner, i) => org?.owners.get(owner)?.get(batch.keys[i]!));
    const result = checkAndConsume(states, batch.limits, batch.cost, now);
    // What the call would leave; whether it was reported is Redis's to say if the script ran there.
    const outcomes = result.outcomes.map((outcome) => ({ ...outcome, firstExceeded: false }));
    return { now, allowed: result.allowed, outcomes };
  }

  /** Drops every counter whose window has ended. */
  sweep(): void {
    const now = this.now();
    for (const [orgId, org] of this.orgs) {
      for (const [owner, counters] of org.owners) {
        for (const [key, entry] of counters) {
          if (now >= entry.expiresAt) {
            counters.delete(key);
            org.size -= 1;
            this.total -= 1;
          }
        }
        if (counters.size === 0) org.owners.delete(owner);
      }
      if (org.size === 0) this.orgs.delete(orgId);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.orgs.clear();
    this.total = 0;
  }
}
