/**
 * Recording attempts: the attempt rows, each delivery's next state and the webhooks' failure streaks, for a batch
 * of concurrent attempts in one statement (group commit, packages/core/src/group-commit.ts). The streaks' SQL is
 * ../webhook/failure-streak.ts, embedded here.
 */
import type { Pool } from '../client';
import { recordFailureStreaks } from '../webhook/failure-streak';
import { asStatus, guard, type DeliveryStatus } from './status';

/** One attempt's record and the delivery's next state, as the attempt decided it. */
export interface AttemptRecord {
  deliveryId: string;
  /** The delivery's webhook, stored on the attempt row (hourly statistics read attempts by webhook and time). */
  webhookId: string;
  /** The lease under which the attempt was made: only its holder moves the delivery on. */
  lease: Date;
  at: Date;
  statusCode: number;
  error: string;
  durationMs: number;
  responseSnippet: string;
  next: {
    status: DeliveryStatus;
    cycleAttempts: number;
    throttledStreak: number;
    nextRetryAt: Date | null;
    error: string | null;
  };
}

/** What an attempt batch did to each webhook's failure streak, decided by the caller in attempt order. */
export interface StreakChange {
  webhookId: string;
  /** A success ended the streak in this batch; `failingFrom` then starts a new one (or null for none). */
  cleared: boolean;
  /** The first failure after the last success of the batch (or of the batch, when nothing cleared). */
  failingFrom: Date | null;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

// The webhooks' part of the statement, written by their own module.
const STREAKS = recordFailureStreaks({ webhookIds: '$13', cleared: '$14', failingFrom: '$15' });

/**
 * recordAttempts: records a batch of attempts in one statement.
 *
 * Inputs: per attempt, the delivery, its webhook, the lease it was made under, what the request did and the
 * delivery's next state (decided by outcome.ts); per webhook, its failure-streak change (circuit-breaker.ts); `now`.
 * Guards: every attempt row is written. A delivery's next state applies only where the attempt's lease still holds
 * and the delivery is still queued: a pause or disable that cancelled it meanwhile wins (a cancel wins over
 * an attempt), and the attempt still counts in `attempt_count` (its lease is given back if still held). A streak
 * change applies where it changes something: a cleared streak is set to the batch's new start, a running one only
 * starts where none was running.
 * Result: the deliveries whose next state was applied, and each streak-changed webhook's `failing_since` as it was
 * before this batch (the circuit breaker's start).
 */
export async function recordAttempts(
  pool: Pool,
  records: readonly AttemptRecord[],
  streaks: readonly StreakChange[],
  now: Date,
): Promise<{ applied: Set<string>; failingSince: Map<string, Date | null> }> {
  const r = records;
  const { rows } = await pool.query<{
    applied: string[] | null;
    streaks: { id: string; failing_since: string | null }[] | null;
  }>({
    name: 'record_attempts',
    text: `WITH r AS (
             SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::int[], $5::text[], $6::int[], $7::text[],
               $8::text[], $9::int[], $10::int[], $11::timestamptz[], $12::text[], $17::uuid[])
               AS r(delivery_id, lease, at, status_code, error, duration_ms, snippet, status, cycle_attempts, throttled_streak,
                    next_retry_at, delivery_error, webhook_id)
           ), a AS (
             INSERT INTO delivery_attempts (delivery_id, webhook_id, at, status_code, error, duration_ms, response_snippet)
             SELECT delivery_id, webhook_id, at, status_code, error, duration_ms, snippet FROM r
           ), applied AS (
             UPDATE deliveries d SET status = ${asStatus('r.status')}, cycle_attempts = r.cycle_attempts,
               throttled_streak = r.throttled_streak, attempt_count = d.attempt_count + 1, next_retry_at = r.next_retry_at,
               leased_until = NULL, error = COALESCE(r.delivery_error, d.error), updated_at = $16
             FROM r
             WHERE d.id = r.delivery_id AND d.id = ANY($1::uuid[]) AND ${guard.leaseHeld('d.', 'r.lease')} AND ${guard.queued('d.')}
             RETURNING d.id
           ), counted AS (
             UPDATE deliveries d SET attempt_count = d.attempt_count + 1, updated_at = $16,
               leased_until = CASE WHEN ${guard.leaseHeld('d.', 'r.lease')} THEN NULL ELSE d.leased_until END
             FROM r
             WHERE d.id = r.delivery_id AND d.id = ANY($1::uuid[]) AND d.id NOT IN (SELECT id FROM applied)
           ), ${STREAKS}
           SELECT (SELECT array_agg(id) FROM applied) AS applied,
                  (SELECT json_agg(json_build_object('id', id, 'failing_since', failing_since)) FROM before) AS streaks`,
    values: [
      r.map((x) => x.deliveryId),
      r.map((x) => x.lease.toISOString()),
      r.map((x) => x.at.toISOString()),
      r.map((x) => x.statusCode),
      r.map((x) => x.error),
      r.map((x) => Math.round(x.durationMs)),
      r.map((x) => x.responseSnippet),
      r.map((x) => x.next.status),
      r.map((x) => x.next.cycleAttempts),
      r.map((x) => x.next.throttledStreak),
      r.map((x) => iso(x.next.nextRetryAt)),
      r.map((x) => x.next.error),
      streaks.map((s) => s.webhookId),
      streaks.map((s) => s.cleared),
      streaks.map((s) => iso(s.failingFrom)),
      now.toISOString(),
      r.map((x) => x.webhookId),
    ],
  });
  const row = rows[0];
  const failingSince = new Map<string, Date | null>();
  for (const s of row?.streaks ?? [])
    failingSince.set(s.id, s.failing_since === null ? null : new Date(s.failing_since));
  return { applied: new Set(row?.applied ?? []), failingSince };
}
