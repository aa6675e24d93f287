import type { Db, Prisma } from '@gatehook/db/client';
import type { Delivery } from '@gatehook/db/generated/client';

/**
 * Gives failed deliveries that have a stored body a fresh cycle of 8 attempts, due now (SPEC 3.1 manual retry,
 * CONTRACT 11 recover): same delivery id, so the `webhook-id` header is unchanged and receivers deduplicate.
 * Earlier attempts stay in the history (`attempt_count` keeps growing). One statement for any number of ids; a
 * delivery that is no longer failed, or never rendered a body, is left alone and not returned. The caller
 * schedules the returned deliveries once its transaction commits.
 */
export async function restartDeliveries(db: Db | Prisma.TransactionClient, ids: readonly string[], now: Date): Promise<Delivery[]> {
  if (ids.length === 0) return [];
  return db.delivery.updateManyAndReturn({
    where: { id: { in: [...ids] }, status: 'failed', bodyEncrypted: { not: null } },
    data: { status: 'pending', cycleAttempts: 0, throttledStreak: 0, nextRetryAt: now, error: null },
  });
}
