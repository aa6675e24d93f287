/**
 * A webhook's configuration as an admin writes it through the API: create, change, rotate the signing secret,
 * delete. Each is one statement in the caller's transaction, after {@link lockWebhook} (except the insert), so that
 * concurrent edits are applied one after the other and each sees the row the previous one left. The secret columns
 * arrive encrypted; nothing here sees a secret in clear. Status changes are status.ts, the failure streak
 * failure-streak.ts, the certificate warning certificate.ts: nothing else writes a webhook row.
 */
import type { Prisma } from '../client';
import type { Webhook } from '../generated/client';

/**
 * lockWebhook: locks an organisation's webhook for the rest of the transaction and reads it.
 *
 * Inputs: the organisation and the webhook. Guards: the webhook belongs to the organisation.
 * Result: the row as it is under the lock, or null when the organisation has no such webhook.
 */
export async function lockWebhook(tx: Prisma.TransactionClient, orgId: string, id: string): Promise<Webhook | null> {
  const locked = await tx.$queryRaw<
    { id: string }[]
  >`SELECT id FROM webhooks WHERE id = ${id}::uuid AND org_id = ${orgId}::uuid FOR UPDATE`;
  if (locked.length === 0) return null;
  return tx.webhook.findUniqueOrThrow({ where: { id } });
}

/** The columns a new webhook is created with; the rest take their defaults (active, no failure streak). */
export type NewWebhook = Omit<
  Prisma.WebhookUncheckedCreateInput,
  | 'status'
  | 'disabledReason'
  | 'failingSince'
  | 'secretsChangedAt'
  | 'previousSecretEncrypted'
  | 'previousSecretValidUntil'
  | 'updatedAt'
>;

/**
 * insertWebhook: one INSERT. Inputs: the new row (id chosen by the caller, secrets encrypted and bound to it).
 * Guards: the primary key. Result: the stored row.
 */
export async function insertWebhook(tx: Prisma.TransactionClient, data: NewWebhook): Promise<Webhook> {
  return tx.webhook.create({ data });
}

/** The columns a configuration change may set: never the status, the failure streak or the signing secret. */
export type WebhookConfigChange = Pick<
  Prisma.WebhookUpdateInput,
  | 'name'
  | 'events'
  | 'condition'
  | 'destination'
  | 'format'
  | 'maxEvents'
  | 'template'
  | 'rateLimitPerSecond'
  | 'urlEncrypted'
  | 'urlMask'
  | 'varNames'
  | 'varsEncrypted'
  | 'headerNames'
  | 'headersEncrypted'
  | 'clientCertificateEncrypted'
  | 'clientCertificateFingerprint'
  | 'clientCertificateNotAfter'
  | 'clientCertificateWarnedAt'
  | 'auth'
  | 'authSecretEncrypted'
>;

/**
 * updateWebhookConfig: one UPDATE of a webhook the caller has locked ({@link lockWebhook}).
 *
 * Inputs: the columns that change. Guards: the row exists (it is locked). Result: the updated row; `updated_at` is
 * now, and the trigger `webhooks_secrets_changed_at` stamps a change of var or header values.
 */
export async function updateWebhookConfig(
  tx: Prisma.TransactionClient,
  id: string,
  change: WebhookConfigChange,
): Promise<Webhook> {
  return tx.webhook.update({ where: { id }, data: change });
}

/**
 * rotateWebhookSecret: one UPDATE of a webhook the caller has locked. Inputs: the new secret and the previous one
 * (re-encrypted for its column, or null when no configured key opens it) with the end of its validity.
 * Guards: the row exists (it is locked). Result: both secrets sign until `previousValidUntil`.
 */
export async function rotateWebhookSecret(
  tx: Prisma.TransactionClient,
  id: string,
  secrets: { secretEncrypted: string; previousSecretEncrypted: string | null; previousValidUntil: Date },
): Promise<void> {
  await tx.webhook.update({
    where: { id },
    data: {
      secretEncrypted: secrets.secretEncrypted,
      previousSecretEncrypted: secrets.previousSecretEncrypted,
      previousSecretValidUntil: secrets.previousValidUntil,
    },
  });
}

/**
 * deleteWebhook: one DELETE of a webhook the caller has locked. Guards: the row exists (it is locked).
 * Result: the webhook is gone with its deliveries, batch entries and tasks (`ON DELETE CASCADE`); a worker drops a
 * job whose webhook no longer exists.
 */
export async function deleteWebhook(tx: Prisma.TransactionClient, id: string): Promise<void> {
  await tx.webhook.delete({ where: { id } });
}
