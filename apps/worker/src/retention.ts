import type { Logger } from '@gatehook/core/logger';
import type { Db } from '@gatehook/db/client';

const CHUNK = 5000;

/**
 * Deletes deliveries (with their attempts and stored bodies) older than the retention, in chunks so the sweep
 * never holds long locks; audit events are pruned on the same horizon by when the service received them (the
 * client's `created_at` is whatever the client wrote), and only once nothing is owed on them: not waiting for
 * fan-out (parked ones included) and not waiting in a batch buffer (CONTRACT 5: such events are not fanned out yet).
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
      SELECT e.org_id, e.id FROM audit_events e WHERE e.received_at < ${horizon}
        AND NOT EXISTS (SELECT 1 FROM pending_fanout p WHERE p.org_id = e.org_id AND p.event_id = e.id)
        AND NOT EXISTS (SELECT 1 FROM batch_items b WHERE b.org_id = e.org_id AND b.event_id = e.id) LIMIT ${CHUNK})`;
    events += n;
    if (n < CHUNK) break;
  }
  if (deliveries || events) logger?.info({ deliveries, events, horizon: horizon.toISOString() }, 'retention sweep');
  return { deliveries, events };
}
