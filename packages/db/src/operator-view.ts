import type { Pool } from './client';

/** What the request view of a delivery needs: its stored body and content type, and when its last attempt began. */
export interface SentRequest {
  createdAt: Date;
  bodyEncrypted: string | null;
  contentType: string | null;
  /** The version of the webhook's var and header values the body was rendered with; null when not recorded. */
  secretsVersion: string | null;
  /** The start of the last attempt (its `webhook-timestamp`), or null when none was made yet. */
  lastAttemptAt: Date | null;
}

/**
 * `sentRequest`: a delivery of a webhook of an organisation, with the time of its last attempt; null when there
 * is no such delivery. One statement: the delivery by primary key, its last attempt by (delivery_id, id).
 */
export async function sentRequest(pool: Pool, orgId: string, webhookId: string, deliveryId: string): Promise<SentRequest | null> {
  const { rows } = await pool.query<{ created_at: Date; body_encrypted: string | null; content_type: string | null; secrets_version: string | null; last_attempt_at: Date | null }>({
    name: 'sent_request',
    text: `SELECT d.created_at, d.body_encrypted, d.content_type, d.secrets_version,
                  (SELECT a.at FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1) AS last_attempt_at
           FROM deliveries d
           WHERE d.id = $1 AND d.webhook_id = $2 AND d.org_id = $3`,
    values: [deliveryId, webhookId, orgId],
  });
  const row = rows[0];
  return row ? { createdAt: row.created_at, bodyEncrypted: row.body_encrypted, contentType: row.content_type, secretsVersion: row.secrets_version, lastAttemptAt: row.last_attempt_at } : null;
}

/** One hour of a webhook's deliveries and attempts (docs/operations.md, "Per-webhook statistics"). */
export interface StatsBucket {
  start: Date;
  /** Deliveries created in the hour. */
  deliveries: number;
  /** Of those, how many are succeeded now. */
  succeeded: number;
  /** Of those, how many are failed now. */
  failed: number;
  /** Attempts made in the hour (429 answers included), whichever delivery they were for. */
  attempts: number;
  /** Median and 99th percentile of those attempts' durations; null without attempts. */
  p50Ms: number | null;
  p99Ms: number | null;
}

/**
 * `webhookStats`: `hours` one-hour buckets from `from` (an hour boundary) of a webhook: the deliveries created in
 * each hour with their outcome now, and the attempts made in each hour with their p50 and p99 durations. One
 * statement of two index range scans over the window: deliveries by deliveries_webhook_id_created_at_id_idx,
 * attempts by delivery_attempts_webhook_id_at_idx; every hour is listed, empty or not.
 */
export async function webhookStats(pool: Pool, webhookId: string, from: Date, hours: number): Promise<StatsBucket[]> {
  const { rows } = await pool.query<{
    start: Date; deliveries: number; succeeded: number; failed: number; attempts: number; p50: number | null; p99: number | null;
  }>({
    name: 'webhook_stats',
    text: `WITH by_delivery AS (
             SELECT floor(extract(epoch FROM created_at - $2::timestamptz) / 3600)::int AS bucket, count(*)::int AS deliveries,
                    count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
                    count(*) FILTER (WHERE status = 'failed')::int AS failed
             FROM deliveries
             WHERE webhook_id = $1 AND created_at >= $2::timestamptz AND created_at < $2::timestamptz + make_interval(hours => $3)
             GROUP BY 1
           ),
           by_attempt AS (
             SELECT floor(extract(epoch FROM at - $2::timestamptz) / 3600)::int AS bucket, count(*)::int AS attempts,
                    round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms))::int AS p50,
                    round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms))::int AS p99
             FROM delivery_attempts
             WHERE webhook_id = $1 AND at >= $2::timestamptz AND at < $2::timestamptz + make_interval(hours => $3)
             GROUP BY 1
           )
           SELECT $2::timestamptz + make_interval(hours => b) AS start,
                  coalesce(bd.deliveries, 0) AS deliveries, coalesce(bd.succeeded, 0) AS succeeded, coalesce(bd.failed, 0) AS failed,
                  coalesce(ba.attempts, 0) AS attempts, ba.p50, ba.p99
           FROM generate_series(0, $3 - 1) AS b
           LEFT JOIN by_delivery bd ON bd.bucket = b
           LEFT JOIN by_attempt ba ON ba.bucket = b
           ORDER BY b`,
    values: [webhookId, from, hours],
  });
  return rows.map((r) => ({
    start: r.start,
    deliveries: r.deliveries,
    succeeded: r.succeeded,
    failed: r.failed,
    attempts: r.attempts,
    p50Ms: r.p50,
    p99Ms: r.p99,
  }));
}
