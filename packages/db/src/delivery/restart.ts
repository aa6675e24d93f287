/**
 * Restarting deliveries: a fresh cycle of 8 attempts for failed deliveries that can be sent again, the same
 * delivery id (so the `webhook-id` header is unchanged and receivers deduplicate). SPEC 3.1 manual retry restarts
 * one delivery now (apps/api/src/services/deliveries.ts); CONTRACT 11 recover restarts a page of them, each at its
 * send slot (packages/delivery/src/tasks/recover.ts).
 */
import type { Db, Prisma } from '../client';
import { guard } from './status';

/**
 * restartDeliveries: one statement for any number of deliveries.
 *
 * Inputs: per delivery, its id and when its first attempt of the new cycle is due. Runs on the client or in the
 * caller's transaction.
 * Guards: the delivery is retryable: failed with a stored body. One that is no longer failed (restarted
 * meanwhile), or never rendered a body, is left alone.
 * Result: the restarted deliveries and their due times: `pending`, cycle and 429 streak reset, error cleared.
 * Earlier attempts stay in the history (`attempt_count` keeps growing). The caller schedules them once its
 * transaction commits.
 */
export async function restartDeliveries(
  db: Db | Prisma.TransactionClient,
  slots: readonly { id: string; dueAt: Date }[],
): Promise<{ id: string; dueAt: Date }[]> {
  if (slots.length === 0) return [];
  const ids = slots.map((s) => s.id);
  const rows = await db.$queryRawUnsafe<{ id: string; next_retry_at: Date }[]>(
    `UPDATE deliveries d SET status = 'pending', cycle_attempts = 0, throttled_streak = 0, next_retry_at = s.due_at,
       error = NULL, updated_at = now()
     FROM unnest($1::uuid[], $2::timestamptz[]) AS s(id, due_at)
     -- The id list again as a constant: the planner prunes deliveries to the partitions of these ids (docs/database.md).
     WHERE d.id = s.id AND d.id = ANY($1::uuid[]) AND ${guard.retryable('d.')}
     RETURNING d.id, d.next_retry_at`,
    ids,
    slots.map((s) => s.dueAt.toISOString()),
  );
  return rows.map((r) => ({ id: r.id, dueAt: r.next_retry_at }));
}
