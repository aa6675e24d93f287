import { LRUCache } from 'lru-cache';
import type { Pool } from '@gatehook/db/client';
import {
  webhookAttemptStats,
  webhookDeliveryCounts,
  type HourAttempts,
  type HourDeliveries,
} from '@gatehook/db/operator-view';

const HOUR_MS = 3_600_000;

/** Hours of statistics kept per process, across webhooks: a week of 1,190 webhooks. */
export const STATS_CACHE_HOURS = 200_000;
/**
 * How long the delivery counts of a past hour are reused. The deliveries created in a past hour are fixed, but their
 * outcome moves on (retries, a manual retry, recover): a chart shows it within this long.
 */
export const STATS_OUTCOME_TTL_MS = 60_000;
/** After an hour's end plus the attempt timeout, how long its last attempts may still take to be recorded. */
export const STATS_RECORD_MARGIN_MS = 60_000;

/** One hour of a webhook's statistics (CONTRACT 17). */
export type StatsHour = HourDeliveries & Omit<HourAttempts, 'start'>;

/**
 * Per-webhook hourly statistics at a bounded cost per call. An hour's attempts never change once every attempt
 * started in it has been recorded (its end, the attempt timeout and {@link STATS_RECORD_MARGIN_MS}): its count and
 * percentiles are computed once per process and kept ({@link STATS_CACHE_HOURS}, least recently used first out). The
 * delivery counts of a past hour are kept {@link STATS_OUTCOME_TTL_MS}. A call computes, in one statement each, only
 * the hours from the first one it has no entry for: after the first call of a webhook, the current hour (and the one
 * before, within the margin of its end) for attempts, and a full recount of the delivery outcomes at most once per
 * {@link STATS_OUTCOME_TTL_MS}.
 */
export class WebhookStats {
  private readonly attempts = new LRUCache<string, HourAttempts>({ max: STATS_CACHE_HOURS });
  private readonly deliveries = new LRUCache<string, HourDeliveries>({
    max: STATS_CACHE_HOURS,
    ttl: STATS_OUTCOME_TTL_MS,
    ttlAutopurge: false,
  });

  /**
   * @param deliveryTimeoutMs DELIVERY_TIMEOUT_MS: an attempt started in an hour is recorded at most this long (and a
   * margin) after it.
   */
  constructor(private readonly deliveryTimeoutMs: number) {}

  /** `hours` hourly buckets from `from` (an hour boundary), oldest first. */
  async hours(pool: Pool, webhookId: string, from: Date, hours: number, now = new Date()): Promise<StatsHour[]> {
    const starts = Array.from({ length: hours }, (_, i) => from.getTime() + i * HOUR_MS);
    const settledBefore = now.getTime() - this.deliveryTimeoutMs - STATS_RECORD_MARGIN_MS;
    const [attempts, deliveries] = await Promise.all([
      this.fill(
        this.attempts,
        webhookId,
        starts,
        (start) => start + HOUR_MS <= settledBefore,
        (at, n) => webhookAttemptStats(pool, webhookId, at, n),
      ),
      this.fill(
        this.deliveries,
        webhookId,
        starts,
        (start) => start + HOUR_MS <= now.getTime(),
        (at, n) => webhookDeliveryCounts(pool, webhookId, at, n),
      ),
    ]);
    return starts.map((_, i) => {
      const { attempts: count, p50Ms, p99Ms } = attempts[i]!;
      return { ...deliveries[i]!, attempts: count, p50Ms, p99Ms };
    });
  }

  /**
   * The entries of `starts`, computing every hour from the first that has no entry in `cache` with `compute` (one
   * statement), and keeping those that `keep` says will not change.
   */
  private async fill<T extends { start: Date }>(
    cache: LRUCache<string, T>,
    webhookId: string,
    starts: readonly number[],
    keep: (start: number) => boolean,
    compute: (from: Date, hours: number) => Promise<T[]>,
  ): Promise<T[]> {
    const found = starts.map((start) => cache.get(`${webhookId}:${start}`));
    const first = found.findIndex((entry) => entry === undefined);
    if (first === -1) return found as T[];
    const computed = await compute(new Date(starts[first]!), starts.length - first);
    computed.forEach((entry, i) => {
      const start = starts[first + i]!;
      found[first + i] = entry;
      if (keep(start)) cache.set(`${webhookId}:${start}`, entry);
    });
    return found as T[];
  }
}
