/**
 * Reads of a webhook's batch buffer (`batch_items`: events waiting to be packed into one delivery, SPEC 6.5). The
 * buffer is written by commitFanout and commitBatch (create.ts) and emptied by dropBatchItems (cancel.ts).
 */
import type { Pool } from '../client';

/**
 * The oldest entries of a webhook's batch buffer, at most `limit`, each with its event's received_at (null for an entry
 * buffered before the column existed). No lock is taken.
 */
export async function readBatchItems(
  pool: Pool,
  webhookId: string,
  limit: number,
): Promise<{ eventId: string; createdAt: Date; receivedAt: Date | null }[]> {
  const { rows } = await pool.query<{ event_id: string; created_at: Date; received_at: Date | null }>({
    name: 'read_batch_items',
    text: `SELECT event_id, created_at, received_at FROM batch_items WHERE webhook_id = $1 ORDER BY created_at, event_id LIMIT $2`,
    values: [webhookId, limit],
  });
  return rows.map((r) => ({ eventId: r.event_id, createdAt: r.created_at, receivedAt: r.received_at }));
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
