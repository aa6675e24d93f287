/**
 * Cancelling what is queued for a webhook that stopped being active. A webhook's deliveries end `failed` with an
 * error saying why, in one of three ways:
 * - {@link cancelQueuedDeliveries}: pause, disable (manual or automatic: 410, circuit breaker, template_error) and a
 *   URL moved to another origin, in the transaction that changes the webhook;
 * - releaseDeliveries with `failWith` (lease.ts): an attempt that finds the webhook deleted, paused or disabled
 *   after it leased the delivery;
 * - a delete takes the webhook's deliveries and batch entries with it (`ON DELETE CASCADE`): no statement here.
 * The batch buffer of a webhook that stopped is dropped by {@link dropBatchItems}. An attempt in flight when its
 * delivery is cancelled keeps its lease until recorded, and its record does not move the delivery on (record.ts).
 */
import type { Pool, Prisma } from '../client';
import { guard } from './status';

/**
 * cancelQueuedDeliveries: one statement, in the caller's transaction.
 *
 * Inputs: the webhook, the `error` its deliveries end with, and `forgetBodies` (a URL moved to another origin:
 * every body stored so far was rendered for the old receiver).
 * Guards: the delivery is queued (pending or retrying); with `forgetBodies`, failed retryable ones too, so that
 * they stop being retryable (CONTRACT 5: no body, not retryable; retry answers 409 and recover skips them). The
 * lease is left alone: an attempt in flight keeps it until it is recorded, so a resume and retry cannot send twice.
 * Result: how many deliveries were cancelled: `failed` with `error`, nothing due; with `forgetBodies`, no body.
 */
export async function cancelQueuedDeliveries(
  tx: Prisma.TransactionClient,
  webhookId: string,
  error: string,
  options: { forgetBodies?: boolean } = {},
): Promise<number> {
  const forget = options.forgetBodies === true;
  return tx.$executeRawUnsafe(
    `UPDATE deliveries SET status = 'failed', error = $2, next_retry_at = NULL, updated_at = now()${forget ? ', body_encrypted = NULL' : ''}
     WHERE webhook_id = $1::uuid AND ${forget ? `(${guard.queued('')} OR (${guard.retryable('')}))` : guard.queued('')}`,
    webhookId,
    error,
  );
}

const DROP_BATCH_ITEMS = 'DELETE FROM batch_items WHERE webhook_id = $1';

/**
 * dropBatchItems: empties a webhook's batch buffer, one statement, on the pool or in the caller's transaction.
 *
 * Inputs: the webhook. Guards: none (a webhook that is no longer active sends none of its buffered events).
 * Result: its buffered events will not be delivered; they stay in the audit log (replay can send them again).
 */
export async function dropBatchItems(client: Pool | Prisma.TransactionClient, webhookId: string): Promise<void> {
  if ('$executeRawUnsafe' in client) await client.$executeRawUnsafe(DROP_BATCH_ITEMS, webhookId);
  else await client.query({ name: 'drop_batch_items', text: DROP_BATCH_ITEMS, values: [webhookId] });
}
