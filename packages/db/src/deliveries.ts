import type { Pool } from './client';

/** A delivery this worker holds the lease of: what its attempt needs, read in the same statement as the claim. */
export interface LeasedDelivery {
  id: string;
  orgId: string;
  webhookId: string;
  status: 'pending' | 'retrying';
  cycleAttempts: number;
  throttledStreak: number;
  bodyEncrypted: string | null;
  contentType: string | null;
  leasedUntil: Date;
}

/** A delivery made from one or more events (a batch), its body rendered and encrypted outside any transaction. */
export interface NewDelivery {
  id: string;
  webhookId: string;
  eventIds: readonly string[];
  status: 'pending' | 'failed';
  bodyEncrypted: string | null;
  contentType: string | null;
  error: string | null;
  nextRetryAt: Date | null;
}

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
    status: 'pending' | 'retrying' | 'succeeded' | 'failed';
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

// deliveries is partitioned by id (docs/database.md, "Partitioned history"). Every statement here names its ids as
// `id = ANY($1)`, also where a join already matches them: the planner prunes to the ids' partitions only from a
// condition on the key itself, and only with the array's value at hand (a custom plan; Postgres 15 does not prune
// a generic plan on `= ANY(<parameter>)`). The plan cache keeps choosing custom plans for these statements, a generic
// plan over every partition costing more; partitions.test.ts checks both.

type LeasedRow = {
  id: string; org_id: string; webhook_id: string; status: 'pending' | 'retrying'; cycle_attempts: number; throttled_streak: number;
  body_encrypted: string | null; content_type: string | null;
};

/**
 * Claims and reads due deliveries in one statement: each of `ids` that is pending or retrying, due, and not leased
 * by a live attempt gets the lease `until`. Whatever the queue does (a duplicated job, a stalled job re-run, a
 * reconciler pass), a delivery is then in flight at most once.
 */
export async function leaseDeliveries(pool: Pool, ids: readonly string[], now: Date, until: Date): Promise<LeasedDelivery[]> {
  const { rows } = await pool.query<LeasedRow>({
    name: 'lease_deliveries',
    text: `UPDATE deliveries SET leased_until = $3
           WHERE id = ANY($1::uuid[]) AND status IN ('pending', 'retrying') AND next_retry_at <= $2
             AND (leased_until IS NULL OR leased_until < $2)
           RETURNING id, org_id, webhook_id, status, cycle_attempts, throttled_streak, body_encrypted, content_type`,
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
  }));
}

/** Why a leased delivery was not attempted, for {@link releaseDeliveries}. */
export interface Release {
  id: string;
  lease: Date;
  /** Set to end the delivery failed with this error; absent to hand it back untouched (a full origin). */
  failWith?: string;
}

/** Gives leases back in one statement; a release whose lease is no longer held changes nothing. */
export async function releaseDeliveries(pool: Pool, releases: readonly Release[]): Promise<void> {
  if (releases.length === 0) return;
  await pool.query({
    name: 'release_deliveries',
    text: `UPDATE deliveries d SET leased_until = NULL,
             status = CASE WHEN r.error IS NULL THEN d.status ELSE 'failed'::"DeliveryStatus" END,
             error = COALESCE(r.error, d.error),
             next_retry_at = CASE WHEN r.error IS NULL THEN d.next_retry_at ELSE NULL END,
             updated_at = now()
           FROM unnest($1::uuid[], $2::timestamptz[], $3::text[]) AS r(id, lease, error)
           WHERE d.id = r.id AND d.id = ANY($1::uuid[]) AND d.leased_until = r.lease`,
    values: [releases.map((r) => r.id), releases.map((r) => r.lease.toISOString()), releases.map((r) => r.failWith ?? null)],
  });
}

/**
 * Records a batch of attempts in one statement (group commit): every attempt row, each delivery's next state
 * (only where the attempt's lease still holds and the delivery is not final: a pause or disable that cancelled it
 * meanwhile wins, the attempt still counts), and the webhooks' failure streaks. Returns the deliveries whose state
 * was applied, and each streak-extended webhook's streak start as it was before this batch.
 */
export async function recordAttempts(
  pool: Pool,
  records: readonly AttemptRecord[],
  streaks: readonly StreakChange[],
  now: Date,
): Promise<{ applied: Set<string>; failingSince: Map<string, Date | null> }> {
  const r = records;
  const { rows } = await pool.query<{ applied: string[] | null; streaks: { id: string; failing_since: string | null }[] | null }>({
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
             UPDATE deliveries d SET status = r.status::"DeliveryStatus", cycle_attempts = r.cycle_attempts,
               throttled_streak = r.throttled_streak, attempt_count = d.attempt_count + 1, next_retry_at = r.next_retry_at,
               leased_until = NULL, error = COALESCE(r.delivery_error, d.error), updated_at = $16
             FROM r
             WHERE d.id = r.delivery_id AND d.id = ANY($1::uuid[]) AND d.leased_until = r.lease AND d.status IN ('pending', 'retrying')
             RETURNING d.id
           ), counted AS (
             UPDATE deliveries d SET attempt_count = d.attempt_count + 1, updated_at = $16,
               leased_until = CASE WHEN d.leased_until = r.lease THEN NULL ELSE d.leased_until END
             FROM r
             WHERE d.id = r.delivery_id AND d.id = ANY($1::uuid[]) AND d.id NOT IN (SELECT id FROM applied)
           ), before AS (
             SELECT id, failing_since FROM webhooks WHERE id = ANY($13::uuid[])
           ), streak AS (
             UPDATE webhooks w SET failing_since = s.failing_from
             FROM unnest($13::uuid[], $14::bool[], $15::timestamptz[]) AS s(id, cleared, failing_from)
             WHERE w.id = s.id AND (
               (s.cleared AND w.failing_since IS DISTINCT FROM s.failing_from) OR (NOT s.cleared AND w.failing_since IS NULL AND s.failing_from IS NOT NULL))
           )
           SELECT (SELECT array_agg(id) FROM applied) AS applied,
                  (SELECT json_agg(json_build_object('id', id, 'failing_since', failing_since)) FROM before) AS streaks`,
    values: [
      r.map((x) => x.deliveryId), r.map((x) => x.lease.toISOString()), r.map((x) => x.at.toISOString()), r.map((x) => x.statusCode),
      r.map((x) => x.error), r.map((x) => Math.round(x.durationMs)), r.map((x) => x.responseSnippet), r.map((x) => x.next.status),
      r.map((x) => x.next.cycleAttempts), r.map((x) => x.next.throttledStreak), r.map((x) => iso(x.next.nextRetryAt)),
      r.map((x) => x.next.error),
      streaks.map((s) => s.webhookId), streaks.map((s) => s.cleared), streaks.map((s) => iso(s.failingFrom)),
      now.toISOString(),
      r.map((x) => x.webhookId),
    ],
  });
  const row = rows[0];
  const failingSince = new Map<string, Date | null>();
  for (const s of row?.streaks ?? []) failingSince.set(s.id, s.failing_since === null ? null : new Date(s.failing_since));
  return { applied: new Set(row?.applied ?? []), failingSince };
}

/** The oldest entries of a webhook's batch buffer, at most `limit`. No lock is taken. */
export async function readBatchItems(pool: Pool, webhookId: string, limit: number): Promise<{ eventId: string; createdAt: Date }[]> {
  const { rows } = await pool.query<{ event_id: string; created_at: Date }>({
    name: 'read_batch_items',
    text: `SELECT event_id, created_at FROM batch_items WHERE webhook_id = $1 ORDER BY created_at, event_id LIMIT $2`,
    values: [webhookId, limit],
  });
  return rows.map((r) => ({ eventId: r.event_id, createdAt: r.created_at }));
}

/** Empties a webhook's batch buffer (a webhook that is no longer active). */
export async function dropBatchItems(pool: Pool, webhookId: string): Promise<void> {
  await pool.query({ name: 'drop_batch_items', text: 'DELETE FROM batch_items WHERE webhook_id = $1', values: [webhookId] });
}

/** How many entries wait in a webhook's batch buffer. */
export async function countBatchItems(pool: Pool, webhookId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>({
    name: 'count_batch_items',
    text: `SELECT count(*)::int AS n FROM batch_items WHERE webhook_id = $1`,
    values: [webhookId],
  });
  return rows[0]?.n ?? 0;
}

/**
 * Turns batch entries into deliveries in one statement, all or nothing: when every entry in `eventIds` is still
 * buffered (another flush did not take them meanwhile) they leave the buffer and `deliveries` are created.
 */
export async function commitBatch(
  pool: Pool,
  input: { orgId: string; webhookId: string; eventIds: readonly string[]; now: Date; deliveries: readonly NewDelivery[] },
): Promise<boolean> {
  const d = input.deliveries;
  const { rows } = await pool.query<{ ok: boolean }>({
    name: 'commit_batch',
    text: `WITH locked AS (
             SELECT event_id FROM batch_items WHERE webhook_id = $1 AND event_id = ANY($2::uuid[]) FOR UPDATE
           ), ok AS (
             SELECT count(*) = cardinality($2::uuid[]) AS ok FROM locked
           ), del AS (
             DELETE FROM batch_items WHERE webhook_id = $1 AND event_id = ANY($2::uuid[]) AND (SELECT ok FROM ok)
           ), ins AS (
             INSERT INTO deliveries (id, org_id, webhook_id, status, event_ids, event_count, body_encrypted, content_type, error,
               next_retry_at, created_at, updated_at)
             SELECT x.id, $3, $1, x.status::"DeliveryStatus", string_to_array(x.events, ',')::uuid[],
               cardinality(string_to_array(x.events, ',')), x.body, x.content_type, x.error, x.next_retry_at, $4, $4
             FROM unnest($5::uuid[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[])
               AS x(id, events, status, body, content_type, error, next_retry_at)
             WHERE (SELECT ok FROM ok)
           )
           SELECT ok FROM ok`,
    values: [
      input.webhookId, input.eventIds, input.orgId, input.now.toISOString(),
      d.map((x) => x.id), d.map((x) => x.eventIds.join(',')), d.map((x) => x.status), d.map((x) => x.bodyEncrypted),
      d.map((x) => x.contentType), d.map((x) => x.error), d.map((x) => iso(x.nextRetryAt)),
    ],
  });
  return rows[0]?.ok ?? false;
}
