/**
 * A delivery's lease: while `leased_until` is set and in the future, one worker holds the delivery's attempt and
 * nobody else may send it. {@link leaseDeliveries} takes leases, {@link releaseDeliveries} gives them back unused
 * (or ends the delivery failed, when the attempt found it must not be sent); recordAttempts (record.ts) gives a
 * lease back with the attempt's outcome.
 */
import type { Pool } from '../client';
import { asStatus, guard, type QueuedStatus } from './status';

/** A delivery this worker holds the lease of: what its attempt needs, read in the same statement as the claim. */
export interface LeasedDelivery {
  id: string;
  orgId: string;
  webhookId: string;
  status: QueuedStatus;
  cycleAttempts: number;
  throttledStreak: number;
  bodyEncrypted: string | null;
  contentType: string | null;
  leasedUntil: Date;
  /** When the delivery was created, while it has had no attempt yet (the `fanout` stage of its latency); else null. */
  awaitingFirstSince: Date | null;
}

// deliveries is partitioned by id (docs/database.md, "Partitioned history"). Every statement here names its ids as
// `id = ANY($1)`, also where a join already matches them: the planner prunes to the ids' partitions only from a
// condition on the key itself, and only with the array's value at hand (a custom plan; Postgres 15 does not prune
// a generic plan on `= ANY(<parameter>)`). The plan cache keeps choosing custom plans for these statements, a generic
// plan over every partition costing more; partitions.test.ts checks both.

type LeasedRow = {
  id: string;
  org_id: string;
  webhook_id: string;
  status: QueuedStatus;
  cycle_attempts: number;
  throttled_streak: number;
  body_encrypted: string | null;
  content_type: string | null;
  awaiting_first_since: Date | null;
};

/**
 * leaseDeliveries: claims and reads due deliveries in one statement.
 *
 * Inputs: delivery ids, `now`, the lease's end `until`.
 * Guards: the delivery is queued (pending or retrying), due (`next_retry_at <= now`) and not leased by a live
 * attempt (no lease, or one that ended before `now`).
 * Result: the deliveries leased until `until`, with what their attempt needs. Whatever the queue does (a
 * duplicated job, a stalled job re-run, a reconciler pass), a delivery is then in flight at most once.
 */
export async function leaseDeliveries(
  pool: Pool,
  ids: readonly string[],
  now: Date,
  until: Date,
): Promise<LeasedDelivery[]> {
  const { rows } = await pool.query<LeasedRow>({
    name: 'lease_deliveries',
    text: `UPDATE deliveries SET leased_until = $3
           WHERE id = ANY($1::uuid[]) AND ${guard.queued('')} AND next_retry_at <= $2
             AND (leased_until IS NULL OR leased_until < $2)
           RETURNING id, org_id, webhook_id, status, cycle_attempts, throttled_streak, body_encrypted, content_type,
                     CASE WHEN attempt_count = 0 THEN created_at END AS awaiting_first_since`,
    values: [ids, now.toISOString(), until.toISOString()],
  });
  return rows.map((r) => ({
    id: r.id,
    orgId: r.org_id,
    webhookId: r.webhook_id,
    status: r.status,
    cycleAttempts: r.cycle_attempts,
    throttledStreak: r.throttled_streak,
    bodyEncrypted: r.body_encrypted,
    contentType: r.content_type,
    leasedUntil: until,
    awaitingFirstSince: r.awaiting_first_since,
  }));
}

/** Why a leased delivery was not attempted, for {@link releaseDeliveries}. */
export interface Release {
  id: string;
  lease: Date;
  /** Set to end the delivery failed with this error; absent to hand it back uncancelled. */
  failWith?: string;
  /**
   * When a delivery turned away (a full or paced webhook) is due again, so it never looks overdue to the reconciler
   * while it waits its turn; absent, it keeps its due time. Ignored with `failWith`.
   */
  dueAt?: Date;
}

/**
 * releaseDeliveries: gives leases back without an attempt, in one statement.
 *
 * Inputs: per delivery, the lease the caller took and either, to cancel it, the error it ends failed with (a webhook
 * deleted, paused or disabled meanwhile, no body, a body that cannot be decrypted) or, for one turned away, when it
 * is due again.
 * Guards: the caller still holds the lease (`leased_until` is the given lease); a release whose lease is no longer
 * held changes nothing.
 * Result: the lease is cleared; a cancelled delivery is `failed` with that error and nothing due; any other keeps
 * its status and error, and is due at the given time (or keeps its due time when none is given).
 */
export async function releaseDeliveries(pool: Pool, releases: readonly Release[]): Promise<void> {
  if (releases.length === 0) return;
  await pool.query({
    name: 'release_deliveries',
    text: `UPDATE deliveries d SET leased_until = NULL,
             status = CASE WHEN r.error IS NULL THEN d.status ELSE ${asStatus(`'failed'`)} END,
             error = COALESCE(r.error, d.error),
             next_retry_at = CASE WHEN r.error IS NULL THEN COALESCE(r.due_at, d.next_retry_at) ELSE NULL END,
             updated_at = now()
           FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::timestamptz[]) AS r(id, lease, error, due_at)
           WHERE d.id = r.id AND d.id = ANY($1::uuid[]) AND ${guard.leaseHeld('d.', 'r.lease')}`,
    values: [
      releases.map((r) => r.id),
      releases.map((r) => r.lease.toISOString()),
      releases.map((r) => r.failWith ?? null),
      releases.map((r) => r.dueAt?.toISOString() ?? null),
    ],
  });
}
