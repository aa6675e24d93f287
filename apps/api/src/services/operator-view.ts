import { AppError, notFound } from '@gatehook/core/errors';
import { sqlPool, type Db } from '@gatehook/db/client';
import { sentRequest } from '@gatehook/db/operator-view';
import type { RenderPool } from '@gatehook/delivery/render/pool';
import type { RequestView } from '@gatehook/delivery/request-view';
import type { WebhookStats } from './webhook-stats';

export interface OperatorViewDeps {
  db: Db;
  /** The API's render pool: request views are decrypted, signed and redacted there, off the event loop. */
  render: RenderPool;
  /** SECRET_ROTATION_OVERLAP_SECONDS: tells which secrets signed an attempt made around a rotation. */
  rotationOverlapSeconds: number;
  /** This process's hourly statistics, kept per webhook and past hour. */
  stats: WebhookStats;
}

const HOUR_MS = 3_600_000;

async function requireWebhook(db: Db, orgId: string, webhookId: string) {
  const webhook = await db.webhook.findFirst({ where: { id: webhookId, orgId } });
  if (!webhook) throw notFound('Webhook');
  return webhook;
}

/** GET /webhooks/{id}/deliveries/{delivery_id}/request: the last attempt's request, secrets redacted (CONTRACT 17). */
export async function getSentRequest(
  deps: OperatorViewDeps,
  orgId: string,
  webhookId: string,
  deliveryId: string,
): Promise<RequestView> {
  const webhook = await requireWebhook(deps.db, orgId, webhookId);
  const sent = await sentRequest(sqlPool(deps.db), orgId, webhookId, deliveryId);
  if (!sent) throw notFound('Delivery');
  if (sent.bodyEncrypted === null) throw new AppError('not_found', 'The delivery has no body: it never rendered');
  if (sent.lastAttemptAt === null) throw new AppError('not_found', 'The delivery has not been sent yet');
  return deps.render.requestView(orgId, {
    webhook: {
      id: webhook.id,
      secretEncrypted: webhook.secretEncrypted,
      previousSecretEncrypted: webhook.previousSecretEncrypted,
      previousSecretValidUntil: webhook.previousSecretValidUntil,
      varsEncrypted: webhook.varsEncrypted,
      headersEncrypted: webhook.headersEncrypted,
      secretsChangedAt: webhook.secretsChangedAt,
      // Its requests carry an access token the view shows redacted (CONTRACT 20).
      auth: webhook.auth,
    },
    delivery: {
      id: deliveryId,
      createdAt: sent.createdAt,
      bodyEncrypted: sent.bodyEncrypted,
      contentType: sent.contentType,
      secretsVersion: sent.secretsVersion,
      attemptAt: sent.lastAttemptAt,
    },
    rotationOverlapSeconds: deps.rotationOverlapSeconds,
  });
}

/** GET /webhooks/{id}/stats: `hours` hourly buckets ending with the current hour, oldest first (CONTRACT 17). */
export async function getWebhookStats(
  deps: OperatorViewDeps,
  orgId: string,
  webhookId: string,
  hours: number,
  now = new Date(),
) {
  await requireWebhook(deps.db, orgId, webhookId);
  const from = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - (hours - 1) * HOUR_MS);
  const buckets = await deps.stats.hours(sqlPool(deps.db), webhookId, from, hours, now);
  return {
    buckets: buckets.map((b) => ({
      start: b.start.toISOString(),
      deliveries: b.deliveries,
      succeeded: b.succeeded,
      failed: b.failed,
      attempts: b.attempts,
      p50_ms: b.p50Ms,
      p99_ms: b.p99Ms,
    })),
  };
}
