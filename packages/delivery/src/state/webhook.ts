import { randomUUID } from 'node:crypto';
import { AppError } from '@gatehook/core/errors';
import { recordAuditEvent } from '@gatehook/db/audit-events';
import type { Db, Prisma } from '@gatehook/db/client';
import { cancelQueuedDeliveries, dropBatchItems } from '@gatehook/db/delivery/cancel';
import type { Webhook } from '@gatehook/db/generated/client';
import { disableActiveWebhook, setWebhookStatus, type WebhookStatusChange } from '@gatehook/db/webhook/status';
import type { DeliveryQueues } from '../queues/producer';
import type { WebhookConfigs } from '../webhook-configs';
import { stoppedBy, type DeliveryErrorCode } from './delivery-error';

/** Announces, after commit, that an organisation's webhooks changed, so every process drops its cached copy. */
export type WebhookAnnouncer = (orgId: string) => Promise<void>;

export type AutomaticDisableReason = 'gone' | 'circuit_breaker' | 'template_error';

const reasonText: Record<AutomaticDisableReason, string> = {
  gone: 'the endpoint answered 410 Gone',
  circuit_breaker: 'deliveries kept failing for longer than the circuit breaker allows',
  template_error: 'its payload template no longer renders',
};

/** Why a webhook's queued deliveries are cancelled; it becomes their `error`. */
export type CancelReason = Extract<DeliveryErrorCode, 'webhook_paused' | 'webhook_disabled' | 'url_origin_changed'>;

/**
 * Drops what is queued for a webhook that stopped being active (pause, disable): its pending and retrying
 * deliveries fail with an error saying why, and its batch buffer is emptied. Runs in the caller's transaction.
 *
 * `url_origin_changed` (a PATCH moved the URL to another scheme, host or port, CONTRACT 15): every body stored so
 * far was rendered with the old receiver's variables, so none may reach the new one. Pending and retrying
 * deliveries fail, and failed ones that could still be retried or recovered lose their stored body, in the same
 * statement; without a body a delivery is not retryable (CONTRACT 5), so retry answers 409 and recover skips it.
 * The batch buffer stays: its events are not rendered yet and go out rendered for the new receiver.
 */
export async function cancelQueuedWork(
  tx: Prisma.TransactionClient,
  webhookId: string,
  error: CancelReason,
): Promise<number> {
  const originChanged = error === 'url_origin_changed';
  const cancelled = await cancelQueuedDeliveries(tx, webhookId, error, { forgetBodies: originChanged });
  if (!originChanged) await dropBatchItems(tx, webhookId);
  return cancelled;
}

/** The status changes an admin asks for (SPEC 3.2), next to the automatic disables below. */
export type ManualStatusOperation = 'enable' | 'disable' | 'pause' | 'resume';

/**
 * Applies an admin's status change to a webhook row the caller has locked, in its transaction: enable and resume
 * make it active, clear the failure streak and deliver only events received from now on (`activeSince`);
 * disable (reason manual) and pause stop deliveries and drop what is queued. Returns the updated row, or
 * `current` itself when the webhook already is where it was asked to go. A change SPEC 3.2 does not allow (resume
 * a disabled webhook, pause a disabled one) is a 409.
 */
export async function changeStatusManually(
  tx: Prisma.TransactionClient,
  current: Webhook,
  operation: ManualStatusOperation,
  now: Date,
): Promise<Webhook> {
  let data: WebhookStatusChange;
  switch (operation) {
    case 'enable':
    case 'resume':
      if (operation === 'resume' && current.status === 'disabled') {
        throw new AppError('conflict', 'A disabled webhook is re-enabled with enable, not resume');
      }
      if (current.status === 'active') return current;
      data = { status: 'active', disabledReason: null, failingSince: null, activeSince: now };
      break;
    case 'disable':
      if (current.status === 'disabled') return current;
      data = { status: 'disabled', disabledReason: 'manual' };
      break;
    case 'pause':
      if (current.status === 'paused') return current;
      if (current.status === 'disabled')
        throw new AppError('conflict', 'A disabled webhook cannot be paused; enable it first');
      data = { status: 'paused', disabledReason: null };
      break;
  }
  const updated = await setWebhookStatus(tx, current.id, data);
  if (updated.status !== 'active') await cancelQueuedWork(tx, current.id, stoppedBy(updated.status));
  return updated;
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
  const webhook = await disableActiveWebhook(tx, webhookId, reason);
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

/**
 * The engine's automatic disable (410, circuit breaker, template_error): commits {@link disableWebhookAutomatically},
 * then runs {@link afterAutomaticDisable}. Those two are the only automatic-disable steps: replay, whose page and
 * disable share one transaction, calls the first in it and the second after its commit (tasks/step.ts).
 */
export async function disableWebhook(
  ctx: { db: Db; queues: DeliveryQueues; configs: WebhookConfigs; announce: WebhookAnnouncer },
  orgId: string,
  webhookId: string,
  reason: AutomaticDisableReason,
): Promise<boolean> {
  const disabled = await ctx.db.$transaction((tx) => disableWebhookAutomatically(tx, webhookId, reason));
  if (!disabled) {
    // Not active any more: whatever changed it, this process's copy was stale.
    ctx.configs.invalidate(orgId);
    return false;
  }
  await afterAutomaticDisable(ctx, disabled);
  return true;
}

/**
 * What follows every automatic disable once its transaction committed, whoever made it (an attempt, fan-out, a
 * batch flush, a replay step): every process sees it (local cache, pub/sub) and its `webhook.disabled` event goes to
 * fan-out at once. Never fails the caller: a lost announcement is covered by the caches' TTL, a lost enqueue by the
 * reconciler.
 */
export async function afterAutomaticDisable(
  ctx: { queues: DeliveryQueues; configs?: WebhookConfigs; announce?: WebhookAnnouncer | undefined },
  disabled: { orgId: string; auditEventId: string },
): Promise<void> {
  ctx.configs?.invalidate(disabled.orgId);
  await ctx.announce?.(disabled.orgId).catch(() => undefined);
  await ctx.queues.fanout(disabled.orgId, [disabled.auditEventId]).catch(() => undefined);
}
