import type { SecretBox } from '@gatehook/core/encryption';
import { AppError, notFound } from '@gatehook/core/errors';
import type { Db } from '@gatehook/db/client';
import type { Delivery, DeliveryAttempt } from '@gatehook/db/generated/client';
import type { Sender } from '@gatehook/delivery/attempt';
import type { DeliveryQueues } from '@gatehook/delivery/jobs';
import { webhookRenderers } from '@gatehook/delivery/rendering';
import { sendTestEvent, type TestResult } from '@gatehook/delivery/test-send';
import { afterCursor, decodeCursor, page } from '../http/pagination';

export interface DeliveryDeps {
  db: Db;
  box: SecretBox;
  queues?: DeliveryQueues | undefined;
  send?: Sender | undefined;
}

/** SPEC 2.2 Delivery; `detail` adds the event ids and the delivery-level error (CONTRACT section 4). */
export function toDeliveryView(row: Delivery, attempts: DeliveryAttempt[], detail = false) {
  return {
    id: row.id,
    webhook_id: row.webhookId,
    status: row.status,
    event_count: row.eventCount,
    attempt_count: row.attemptCount,
    attempts: attempts.map((a) => ({
      at: a.at.toISOString(),
      status_code: a.statusCode,
      error: a.error,
      duration_ms: a.durationMs,
      response_snippet: a.responseSnippet,
    })),
    ...(row.nextRetryAt && (row.status === 'pending' || row.status === 'retrying') ? { next_retry_at: row.nextRetryAt.toISOString() } : {}),
    retryable: row.status === 'failed' && row.bodyEncrypted !== null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    ...(detail ? { event_ids: row.eventIds, error: row.error } : {}),
  };
}

async function requireWebhook(db: Db, orgId: string, webhookId: string) {
  const webhook = await db.webhook.findFirst({ where: { id: webhookId, orgId } });
  if (!webhook) throw notFound('Webhook');
  return webhook;
}

async function attemptsOf(db: Db, deliveryIds: string[]): Promise<Map<string, DeliveryAttempt[]>> {
  const rows = await db.deliveryAttempt.findMany({ where: { deliveryId: { in: deliveryIds } }, orderBy: [{ deliveryId: 'asc' }, { id: 'asc' }] });
  const map = new Map<string, DeliveryAttempt[]>();
  for (const row of rows) {
    const list = map.get(row.deliveryId);
    if (list) list.push(row);
    else map.set(row.deliveryId, [row]);
  }
  return map;
}

/** GET /webhooks/{id}/deliveries: newest first, with attempt timelines. */
export async function listDeliveries(
  deps: DeliveryDeps,
  orgId: string,
  webhookId: string,
  query: { limit: number; cursor?: string | undefined; status?: Delivery['status'] | undefined },
) {
  await requireWebhook(deps.db, orgId, webhookId);
  const cursor = decodeCursor(query.cursor);
  const rows = await deps.db.delivery.findMany({
    where: {
      webhookId,
      ...(query.status ? { status: query.status } : {}),
      ...afterCursor(cursor),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: query.limit + 1,
  });
  const { items, nextCursor } = page(rows, query.limit);
  const attempts = await attemptsOf(deps.db, items.map((d) => d.id));
  return { items: items.map((d) => toDeliveryView(d, attempts.get(d.id) ?? [])), next_cursor: nextCursor };
}

async function requireDelivery(db: Db, orgId: string, webhookId: string, deliveryId: string) {
  const delivery = await db.delivery.findFirst({ where: { id: deliveryId, webhookId, orgId } });
  if (!delivery) throw notFound('Delivery');
  return delivery;
}

/** GET /webhooks/{id}/deliveries/{delivery_id}. */
export async function getDelivery(deps: DeliveryDeps, orgId: string, webhookId: string, deliveryId: string) {
  await requireWebhook(deps.db, orgId, webhookId);
  const delivery = await requireDelivery(deps.db, orgId, webhookId, deliveryId);
  const attempts = await attemptsOf(deps.db, [delivery.id]);
  return toDeliveryView(delivery, attempts.get(delivery.id) ?? [], true);
}

/**
 * POST .../retry: a failed delivery with a stored body, on an active webhook, starts a fresh cycle of 8 attempts.
 * Earlier attempts stay in its history (attempt_count keeps growing).
 */
export async function retryDelivery(deps: DeliveryDeps, orgId: string, webhookId: string, deliveryId: string) {
  const webhook = await requireWebhook(deps.db, orgId, webhookId);
  const delivery = await requireDelivery(deps.db, orgId, webhookId, deliveryId);
  if (webhook.status !== 'active') throw new AppError('conflict', `The webhook is ${webhook.status}; only deliveries of an active webhook can be retried`);
  if (delivery.status !== 'failed') throw new AppError('conflict', `The delivery is ${delivery.status}; only failed deliveries can be retried`);
  if (delivery.bodyEncrypted === null) throw new AppError('conflict', 'The delivery never produced a body, so there is nothing to re-send');
  const now = new Date();
  const updated = await deps.db.delivery.updateManyAndReturn({
    where: { id: deliveryId, status: 'failed' },
    data: { status: 'pending', cycleAttempts: 0, nextRetryAt: now, error: null, leasedUntil: null },
  });
  const row = updated[0];
  if (!row) throw new AppError('conflict', 'The delivery changed meanwhile; it is no longer failed');
  // If Redis is down the reconciler sends it once the next attempt is overdue.
  await deps.queues?.deliver(row.id, now).catch(() => undefined);
  const attempts = await attemptsOf(deps.db, [row.id]);
  return toDeliveryView(row, attempts.get(row.id) ?? []);
}

/** POST /webhooks/{id}/test. */
export async function testWebhook(deps: DeliveryDeps, orgId: string, webhookId: string): Promise<TestResult> {
  const webhook = await requireWebhook(deps.db, orgId, webhookId);
  if (!deps.send) throw new AppError('internal', 'Test sends are not configured in this process');
  return sendTestEvent({ box: deps.box, send: deps.send, renderer: webhookRenderers(deps.box) }, webhook);
}
