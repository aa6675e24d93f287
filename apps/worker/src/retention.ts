import type { Logger } from '@gatehook/core/logger';
import type { Db } from '@gatehook/db/client';

const CHUNK = 5000;

/**
 * Deletes deliveries (with their attempts and stored bodies) older than the retention, in chunks so the sweep
 * never holds long locks; audit events already fanned out are pruned on the same horizon.
 */
export async function sweepRetention(db: Db, retentionDays: number, logger?: Logger): Promise<{ deliveries: number; events: number }> {
  const horizon = new Date(Date.now() - retentionDays * 86_400_000);
  let deliveries = 0;
  let events = 0;
  for (;;) {
    const n = await db.$executeRaw`DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE created_at < ${horizon} LIMIT ${CHUNK})`;
    deliveries += n;
    if (n < CHUNK) break;
  }
  for (;;) {
    const n = await db.$executeRaw`DELETE FROM audit_events WHERE (org_id, id) IN (
      SELECT e.org_id, e.id FROM audit_events e WHERE e.created_at < ${horizon}
        AND NOT EXISTS (SELECT 1 FROM pending_fanout p WHERE p.org_id = e.org_id AND p.event_id = e.id) LIMIT ${CHUNK})`;
    events += n;
    if (n < CHUNK) break;
  }
  if (deliveries || events) logger?.info({ deliveries, events, horizon: horizon.toISOString() }, 'retention sweep');
  return { deliveries, events };
}
