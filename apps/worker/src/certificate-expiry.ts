import type { Logger } from '@gatehook/core/logger';
import type { Pool } from '@gatehook/db/client';
import { warnExpiringClientCertificates } from '@gatehook/db/webhook/certificate';
import { CLIENT_CERTIFICATE_WARNING_DAYS } from '@gatehook/egress/client-certificate';

/**
 * Warns each organisation once per client certificate that expires within CLIENT_CERTIFICATE_WARNING_DAYS (a
 * `client_certificate_expiring` notification, CONTRACT 18). Runs with the worker's hourly housekeeping; every worker
 * may run it, the statement warns about each certificate once.
 */
export async function warnExpiringCertificates(pool: Pool, logger?: Logger, now = new Date()): Promise<number> {
  const warned = await warnExpiringClientCertificates(pool, now, CLIENT_CERTIFICATE_WARNING_DAYS);
  for (const w of warned)
    logger?.info(
      { webhookId: w.webhookId, orgId: w.orgId, notAfter: w.notAfter.toISOString() },
      'client certificate expires soon; organisation notified',
    );
  return warned.length;
}
