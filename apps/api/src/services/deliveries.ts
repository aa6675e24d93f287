import type { SecretBox } from '@gatehook/core/encryption';
import { AppError, notFound } from '@gatehook/core/errors';
import type { Db } from '@gatehook/db/client';
import type { Delivery, DeliveryAttempt } from '@gatehook/db/generated/client';
import type { Sender } from '@gatehook/delivery/render/request';
import type { DeliveryQueues } from '@gatehook/delivery';
import { restartDeliveries } from '@gatehook/db/delivery/restart';
import { isQueued, isRetryable } from '@gatehook/db/delivery/status';
import type { RenderPool } from '@gatehook/delivery/render/pool';
import type { TestResult } from '@gatehook/core/webhook-schema';
import { parseStoredWebhookAuth } from '@gatehook/core/webhook-auth';
import { sendTestEvent } from '@gatehook/delivery/pipeline/test-send';
import type { WebhookPace } from '@gatehook/delivery/flow/webhook-pace';
import { byCreatedAt, bySequence, listPage } from '../http/pagination';
import { deliveryError } from '@gatehook/delivery/state/delivery-error';

export interface DeliveryDeps {
  db: Db;
  box: SecretBox;
  queues?: DeliveryQueues | undefined;
  send?: Sender | undefined;
  /** The API's render pool: a test send's body is rendered there, not on the event loop. */
  render: RenderPool;
  /** Per-webhook rate (`rate_limit_per_second`), shared with the workers: a test send takes a turn of it. */
  pace?: WebhookPace | undefined;
}

/**
 * Attempts a delivery shows inline, the latest ones (a receiver answering 429 for days makes thousands); the
 * rest page through GET /webhooks/{id}/deliveries/{delivery_id}/attempts from `attempts_cursor`.
 */
export const MAX_INLINE_ATTEMPTS = 50;

type AttemptRow = Pick<
  DeliveryAttempt,
  'id' | 'deliveryId' | 'at' | 'statusCode' | 'error' | 'durationMs' | 'responseSnippet'
>;

function toAttemptView(a: AttemptRow) {
  return {
    at: a.at.toISOString(),
    status_code: a.statusCode,
    error: a.error,
    duration_ms: a.durationMs,
    response_snippet: a.responseSnippet,
  };
}

/**
 * SPEC 2.2 Delivery; `detail` adds the event ids and the delivery-level error (CONTRACT section 4). `attempts`
 * holds the latest (up to MAX_INLINE_ATTEMPTS + 1 fetched, newest first) oldest first; `attempts_cursor` pages
 * the older ones when there are more.
 */
export function toDeliveryView(row: Delivery, latestAttempts: AttemptRow[], detail = false) {
  const shown = latestAttempts.slice(0, MAX_INLINE_ATTEMPTS);
  const oldestShown = shown.at(-1);
  return {
    id: row.id,
    webhook_id: row.webhookId,
    status: row.status,
    event_count: row.eventCount,
    attempt_count: row.attemptCount,
    attempts: shown.reverse().map(toAttemptView),
    attempts_cursor:
      latestAttempts.length > MAX_INLINE_ATTEMPTS && oldestShown ? bySequence.cursorOf(oldestShown) : null,
    ...(row.nextRetryAt && isQueued(row.status) ? { next_retry_at: row.nextRetryAt.toISOString() } : {}),
    retryable: isRetryable(row),
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

/** The latest MAX_INLINE_ATTEMPTS + 1 attempts of each delivery, newest first: one indexed scan per delivery. */
async function attemptsOf(db: Db, deliveryIds: string[]): Promise<Map<string, AttemptRow[]>> {
  if (deliveryIds.length === 0) return new Map();
  const rows = await db.$queryRaw<AttemptRow[]>`
    SELECT a.id, a.delivery_id AS "deliveryId", a.at, a.status_code AS "statusCode", a.error,
           a.duration_ms AS "durationMs", a.response_snippet AS "responseSnippet"
    FROM unnest(${deliveryIds}::uuid[]) AS d(id)
    CROSS JOIN LATERAL (
      SELECT * FROM delivery_attempts WHERE delivery_id = d.id ORDER BY id DESC LIMIT ${MAX_INLINE_ATTEMPTS + 1}
    ) a
    ORDER BY a.delivery_id, a.id DESC`;
  const map = new Map<string, AttemptRow[]>();
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
  return listPage(
    query,
    byCreatedAt('desc'),
    ({ where, ...page }) =>
      deps.db.delivery.findMany({
        where: { webhookId, ...(query.status ? { status: query.status } : {}), ...where },
        ...page,
      }),
    async (items) => {
      const attempts = await attemptsOf(
        deps.db,
        items.map((d) => d.id),
      );
      return items.map((d) => toDeliveryView(d, attempts.get(d.id) ?? []));
    },
  );
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

/** GET /webhooks/{id}/deliveries/{delivery_id}/attempts: every attempt, newest first, a page at a time. */
export async function listAttempts(
  deps: DeliveryDeps,
  orgId: string,
  webhookId: string,
  deliveryId: string,
  query: { limit: number; cursor?: string | undefined },
) {
  await requireWebhook(deps.db, orgId, webhookId);
  await requireDelivery(deps.db, orgId, webhookId, deliveryId);
  return listPage(
    query,
    bySequence,
    ({ where, ...page }) => deps.db.deliveryAttempt.findMany({ where: { deliveryId, ...where }, ...page }),
    (items) => items.map(toAttemptView),
  );
}

/**
 * POST .../retry: a failed delivery with a stored body, on an active webhook, starts a fresh cycle of 8 attempts.
 * Earlier attempts stay in its history (attempt_count keeps growing).
 */
export async function retryDelivery(deps: DeliveryDeps, orgId: string, webhookId: string, deliveryId: string) {
  const webhook = await requireWebhook(deps.db, orgId, webhookId);
  const delivery = await requireDelivery(deps.db, orgId, webhookId, deliveryId);
  if (webhook.status !== 'active')
    throw new AppError(
      'conflict',
      `The webhook is ${webhook.status}; only deliveries of an active webhook can be retried`,
    );
  if (delivery.status !== 'failed')
    throw new AppError('conflict', `The delivery is ${delivery.status}; only failed deliveries can be retried`);
  if (delivery.error === deliveryError('url_origin_changed')) {
    throw new AppError(
      'conflict',
      "The webhook's URL moved to another origin after this delivery was made, and its body was rendered for the old receiver; replay its events instead",
    );
  }
  if (delivery.bodyEncrypted === null)
    throw new AppError('conflict', 'The delivery never produced a body, so there is nothing to re-send');
  const now = new Date();
  const [restarted] = await restartDeliveries(deps.db, [{ id: deliveryId, dueAt: now }]);
  if (!restarted) throw new AppError('conflict', 'The delivery changed meanwhile; it is no longer failed');
  // Read before it is queued, so the answer is the state the retry made, not a later attempt's.
  const row = await requireDelivery(deps.db, orgId, webhookId, deliveryId);
  // If Redis is down the reconciler sends it once the next attempt is overdue.
  await deps.queues?.deliver(restarted.id, now, orgId).catch(() => undefined);
  const attempts = await attemptsOf(deps.db, [row.id]);
  return toDeliveryView(row, attempts.get(row.id) ?? []);
}

/** POST /webhooks/{id}/test. */
export async function testWebhook(deps: DeliveryDeps, orgId: string, webhookId: string): Promise<TestResult> {
  const webhook = await requireWebhook(deps.db, orgId, webhookId);
  if (!deps.send) throw new AppError('internal', 'Test sends are not configured in this process');
  return sendTestEvent(
    { box: deps.box, send: deps.send, render: (stored, event) => deps.render.testBody(stored, event), pace: deps.pace },
    { ...webhook, auth: parseStoredWebhookAuth(webhook.auth) },
  );
}
