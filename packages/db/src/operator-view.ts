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
export async function sentRequest(
  pool: Pool,
  orgId: string,
  webhookId: string,
  deliveryId: string,
): Promise<SentRequest | null> {
  const { rows } = await pool.query<{
    created_at: Date;
    body_encrypted: string | null;
    content_type: string | null;
    secrets_version: string | null;
    last_attempt_at: Date | null;
  }>({
    name: 'sent_request',
    text: `SELECT d.created_at, d.body_encrypted, d.content_type, d.secrets_version,
                  (SELECT a.at FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1) AS last_attempt_at
           FROM deliveries d
           WHERE d.id = $1 AND d.webhook_id = $2 AND d.org_id = $3`,
    values: [deliveryId, webhookId, orgId],
  });
  const row = rows[0];
  return row
    ? {
        createdAt: row.created_at,
        bodyEncrypted: row.body_encrypted,
        contentType: row.content_type,
        secretsVersion: row.secrets_version,
        lastAttemptAt: row.last_attempt_at,
      }
    : null;
}

/**
 * The deliveries of a webhook created in one hour, by their outcome now (docs/operations.md, "Per-webhook statistics").
 */
export interface HourDeliveries {
  start: Date;
  /** Deliveries created in the hour. */
  deliveries: number;
  /** Of those, how many are succeeded now. */
  succeeded: number;
  /** Of those, how many are failed now. */
  failed: number;
}

/** The attempts made to a webhook in one hour, 429 answers included, whichever delivery they were for. */
export interface HourAttempts {
  start: Date;
  attempts: number;
  /** Median and 99th percentile of their durations; null without attempts. */
  p50Ms: number | null;
  p99Ms: number | null;
}

/**
 * `webhookDeliveryCounts`: `hours` one-hour buckets from `from` (an hour boundary) of the deliveries a webhook
 * created in each, with their outcome now. One index range scan (deliveries_webhook_id_created_at_id_idx); every
 * hour is listed, empty or not.
 */
export async function webhookDeliveryCounts(
  pool: Pool,
  webhookId: string,
  from: Date,
  hours: number,
): Promise<HourDeliveries[]> {
  const { rows } = await pool.query<{ start: Date; deliveries: number; succeeded: number; failed: number }>({
    name: 'webhook_delivery_counts',
    text: `WITH by_hour AS (
             SELECT floor(extract(epoch FROM created_at - $2::timestamptz) / 3600)::int AS bucket, count(*)::int AS deliveries,
                    count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
                    count(*) FILTER (WHERE status = 'failed')::int AS failed
             FROM deliveries
             WHERE webhook_id = $1 AND created_at >= $2::timestamptz AND created_at < $2::timestamptz + make_interval(hours => $3)
             GROUP BY 1
           )
           SELECT $2::timestamptz + make_interval(hours => b) AS start,
                  coalesce(h.deliveries, 0) AS deliveries, coalesce(h.succeeded, 0) AS succeeded, coalesce(h.failed, 0) AS failed
           FROM generate_series(0, $3 - 1) AS b LEFT JOIN by_hour h ON h.bucket = b
           ORDER BY b`,
    values: [webhookId, from, hours],
  });
  return rows.map((r) => ({ start: r.start, deliveries: r.deliveries, succeeded: r.succeeded, failed: r.failed }));
}

/**
 * `webhookAttemptStats`: `hours` one-hour buckets from `from` (an hour boundary) of the attempts made to a webhook in
 * each, with their p50 and p99 durations (percentile_cont, interpolated). One index range scan
 * (delivery_attempts_webhook_id_at_idx) and a sort per hour; every hour is listed, empty or not.
 */
export async function webhookAttemptStats(
  pool: Pool,
  webhookId: string,
  from: Date,
  hours: number,
): Promise<HourAttempts[]> {
  const { rows } = await pool.query<{ start: Date; attempts: number; p50: number | null; p99: number | null }>({
    name: 'webhook_attempt_stats',
    text: `WITH by_hour AS (
             SELECT floor(extract(epoch FROM at - $2::timestamptz) / 3600)::int AS bucket, count(*)::int AS attempts,
                    round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms))::int AS p50,
                    round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms))::int AS p99
             FROM delivery_attempts
             WHERE webhook_id = $1 AND at >= $2::timestamptz AND at < $2::timestamptz + make_interval(hours => $3)
             GROUP BY 1
           )
           SELECT $2::timestamptz + make_interval(hours => b) AS start, coalesce(h.attempts, 0) AS attempts, h.p50, h.p99
           FROM generate_series(0, $3 - 1) AS b LEFT JOIN by_hour h ON h.bucket = b
           ORDER BY b`,
    values: [webhookId, from, hours],
  });
  return rows.map((r) => ({ start: r.start, attempts: r.attempts, p50Ms: r.p50, p99Ms: r.p99 }));
}
