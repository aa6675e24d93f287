import { randomUUID } from 'node:crypto';
import { recordAuditEvent } from '@gatehook/db/audit-events';
import type { Prisma } from '@gatehook/db/client';

export type AutomaticDisableReason = 'gone' | 'circuit_breaker' | 'template_error';

const reasonText: Record<AutomaticDisableReason, string> = {
  gone: 'the endpoint answered 410 Gone',
  circuit_breaker: 'deliveries kept failing for longer than the circuit breaker allows',
  template_error: 'its payload template no longer renders',
};

/**
 * Drops what is queued for a webhook that stopped being active (pause, disable): its pending and retrying
 * deliveries fail with an error saying why, and its batch buffer is emptied. Runs in the caller's transaction.
 */
export async function cancelQueuedWork(tx: Prisma.TransactionClient, webhookId: string, error: 'webhook_paused' | 'webhook_disabled'): Promise<number> {
  const cancelled = await tx.delivery.updateMany({
    where: { webhookId, status: { in: ['pending', 'retrying'] } },
    data: { status: 'failed', error, nextRetryAt: null, leasedUntil: null },
  });
  await tx.batchItem.deleteMany({ where: { webhookId } });
  return cancelled.count;
}

/**
 * Disables an active webhook for a reason of SPEC 3.2 (gone, circuit_breaker, template_error): cancels its queued
 * work, creates an in-app notification and records a `webhook.disabled` audit event, which is itself fanned out
 * to the webhooks subscribed to it. Returns the audit event id, or null when the webhook was not active.
 */
export async function disableWebhookAutomatically(
  tx: Prisma.TransactionClient,
  webhookId: string,
  reason: AutomaticDisableReason,
): Promise<{ orgId: string; auditEventId: string } | null> {
  const updated = await tx.webhook.updateManyAndReturn({
    where: { id: webhookId, status: 'active' },
    data: { status: 'disabled', disabledReason: reason },
    select: { id: true, orgId: true, name: true },
  });
  const webhook = updated[0];
  if (!webhook) return null;
  await cancelQueuedWork(tx, webhookId, 'webhook_disabled');
  await tx.notification.create({
    data: {
      id: randomUUID(),
      orgId: webhook.orgId,
      kind: 'webhook_disabled',
      webhookId,
      message: `Webhook "${webhook.name}" was disabled because ${reasonText[reason]}. Fix the endpoint, then re-enable it.`,
    },
  });
  const auditEventId = await recordAuditEvent(tx, {
    orgId: webhook.orgId,
    action: 'webhook.disabled',
    actorType: 'system',
    actorId: 'gatehook',
    actorDisplayName: 'Gatehook',
    resourceType: 'webhook',
    resourceId: webhook.id,
    resourceDisplayName: webhook.name,
    changes: [
      { field: 'status', old: 'active', new: 'disabled' },
      { field: 'disabled_reason', old: null, new: reason },
    ],
    payload: { webhook_id: webhook.id, webhook_name: webhook.name, reason },
  });
  return { orgId: webhook.orgId, auditEventId };
}
