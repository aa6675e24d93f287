import type { Db, Prisma } from '@gatehook/db/client';

/**
 * Gives failed deliveries that have a stored body a fresh cycle of 8 attempts, each due at its own time (SPEC 3.1
 * manual retry: now; CONTRACT 11 recover: the task's send slot): same delivery id, so the `webhook-id` header is
 * unchanged and receivers deduplicate. Earlier attempts stay in the history (`attempt_count` keeps growing). One
 * statement for any number of deliveries; one that is no longer failed, or never rendered a body, is left alone
 * and not returned. The caller schedules the returned deliveries once its transaction commits.
 */
export async function restartDeliveries(
  db: Db | Prisma.TransactionClient,
  slots: readonly { id: string; dueAt: Date }[],
): Promise<{ id: string; dueAt: Date }[]> {
  if (slots.length === 0) return [];
  const rows = await db.$queryRaw<{ id: string; next_retry_at: Date }[]>`
    UPDATE deliveries d SET status = 'pending', cycle_attempts = 0, throttled_streak = 0, next_retry_at = s.due_at,
      error = NULL, updated_at = now()
    FROM unnest(${slots.map((s) => s.id)}::uuid[], ${slots.map((s) => s.dueAt.toISOString())}::timestamptz[]) AS s(id, due_at)
    -- The id list again as a constant: the planner prunes deliveries to the partitions of these ids (docs/database.md).
    WHERE d.id = s.id AND d.id = ANY(${slots.map((s) => s.id)}::uuid[]) AND d.status = 'failed' AND d.body_encrypted IS NOT NULL
    RETURNING d.id, d.next_retry_at`;
  return rows.map((r) => ({ id: r.id, dueAt: r.next_retry_at }));
}
