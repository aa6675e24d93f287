/**
 * The client certificate's expiry warning: the one write of a webhook row made by the worker's periodic work. The
 * other writes of a webhook row are in config.ts, status.ts and failure-streak.ts of this folder.
 */
import type { Pool } from '../client';

/** A webhook whose client certificate expires soon, as warned about. */
export interface ExpiringCertificate {
  webhookId: string;
  orgId: string;
  notAfter: Date;
}

/**
 * warnExpiringClientCertificates: one statement. Marks every webhook whose client certificate expires within
 * `warningDays` of `now` and has not been warned about (`client_certificate_warned_at` null; a new certificate
 * clears it) and creates one `client_certificate_expiring` notification for each. Idempotent: a second run, or a
 * second worker at once, finds the rows marked (the UPDATE locks them) and warns no one twice.
 */
export async function warnExpiringClientCertificates(
  pool: Pool,
  now: Date,
  warningDays: number,
): Promise<ExpiringCertificate[]> {
  const { rows } = await pool.query<{ webhook_id: string; org_id: string; not_after: Date }>({
    name: 'warn_expiring_client_certificates',
    text: `WITH due AS (
        UPDATE webhooks SET client_certificate_warned_at = $1
        WHERE client_certificate_not_after IS NOT NULL AND client_certificate_warned_at IS NULL
          AND client_certificate_not_after <= $1::timestamptz + make_interval(days => $2::int)
        RETURNING id, org_id, name, client_certificate_fingerprint, client_certificate_not_after
      ), noted AS (
        INSERT INTO notifications (id, org_id, kind, webhook_id, message, created_at)
        SELECT gen_random_uuid(), org_id, 'client_certificate_expiring', id,
          format('The client certificate of webhook "%s" (SHA-256 %s) %s on %s; upload a new one to keep mTLS deliveries working.',
            name, client_certificate_fingerprint,
            CASE WHEN client_certificate_not_after <= $1 THEN 'expired' ELSE 'expires' END,
            to_char(client_certificate_not_after AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
          $1
        FROM due
      )
      SELECT id AS webhook_id, org_id, client_certificate_not_after AS not_after FROM due`,
    values: [now, warningDays],
  });
  return rows.map((r) => ({ webhookId: r.webhook_id, orgId: r.org_id, notAfter: r.not_after }));
}
