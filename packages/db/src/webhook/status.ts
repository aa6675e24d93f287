/**
 * A webhook's status (SPEC 3.2): an admin's change ({@link setWebhookStatus}) and the engine's automatic disable
 * ({@link disableActiveWebhook}). Each is one statement in the caller's transaction, which also cancels what is
 * queued for a webhook that stops (../delivery/cancel.ts).
 */
import type { Prisma } from '../client';
import type { DisabledReason, Webhook } from '../generated/client';

/**
 * What an admin's status change writes: enable and resume make the webhook active, end its failure streak and
 * deliver only events received from `activeSince` on; disable and pause stop it.
 */
export type WebhookStatusChange =
  | { status: 'active'; disabledReason: null; failingSince: null; activeSince: Date }
  | { status: 'disabled'; disabledReason: 'manual' }
  | { status: 'paused'; disabledReason: null };

/**
 * setWebhookStatus: one UPDATE of a webhook the caller has locked (./config.ts, lockWebhook), after deciding that the
 * change is allowed from its current status. Guards: the row exists (it is locked). Result: the updated row.
 */
export async function setWebhookStatus(
  tx: Prisma.TransactionClient,
  id: string,
  change: WebhookStatusChange,
): Promise<Webhook> {
  return tx.webhook.update({ where: { id }, data: change });
}

/** An automatic disable's reason: 410 Gone, the circuit breaker, a template that no longer renders. */
export type AutomaticDisableReason = Exclude<DisabledReason, 'manual'>;

/**
 * disableActiveWebhook: one UPDATE … RETURNING.
 *
 * Inputs: the webhook and the reason. Guards: the webhook is active, so that of two disables at once (or a disable
 * racing a pause) exactly one happens, and a webhook paused or disabled meanwhile stays as it is.
 * Result: the webhook's id, organisation and name when this statement disabled it, else null.
 */
export async function disableActiveWebhook(
  tx: Prisma.TransactionClient,
  id: string,
  reason: AutomaticDisableReason,
): Promise<{ id: string; orgId: string; name: string } | null> {
  const updated = await tx.webhook.updateManyAndReturn({
    where: { id, status: 'active' },
    data: { status: 'disabled', disabledReason: reason },
    select: { id: true, orgId: true, name: true },
  });
  return updated[0] ?? null;
}
