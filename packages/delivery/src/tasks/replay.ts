import type { Prisma } from '@gatehook/db/client';
import { createReplayedDeliveries } from '@gatehook/db/delivery/create';
import type { Webhook } from '@gatehook/db/generated/client';
import { parseStoredWebhookAuth } from '@gatehook/core/webhook-auth';
import { replayablePage, type WebhookTask } from '@gatehook/db/webhook-tasks';
import type { RenderPool } from '../render/pool';
import { disableWebhookAutomatically } from '../state/webhook';
import type { PageResult, Scheduler } from './page';
import { isLastPage } from './pacing';

/**
 * Replay: the next page of the organisation's events of the window, matched against the webhook's current
 * subscription and condition (whenever they were received: before the webhook existed too), then made into new
 * deliveries rendered with the current template and packed by the current format and max_events, as fan-out and
 * the batch flush pack them, each due at its send slot. A batching webhook's page is packed here rather than
 * through the batch buffer, so that its deliveries can be paced; replayed events are therefore never in one body
 * with live ones, and a page's last body may hold fewer than max_events.
 */
export async function replayPage(
  render: RenderPool,
  tx: Prisma.TransactionClient,
  task: WebhookTask,
  webhook: Webhook,
  limit: number,
  now: Date,
  schedule: Scheduler,
): Promise<Omit<PageResult, 'pacedUntil'>> {
  const events = await replayablePage(tx, task, webhook.events, limit);
  const last = events.at(-1);
  const result: Omit<PageResult, 'pacedUntil'> = {
    handled: events.length,
    cursor: last ? { at: last.receivedAt, id: last.data.id } : null,
    done: isLastPage(events.length, limit),
    due: [],
    disabled: null,
  };
  if (events.length === 0) return result;
  // Matched and rendered exactly as live traffic, by the same plan in the render pool as fan-out.
  const prepared = await render.plan(webhook.orgId, {
    webhooks: [{ ...webhook, auth: parseStoredWebhookAuth(webhook.auth) }],
    events,
    now,
    filter: 'replay',
    buffer: false,
  });
  if (prepared.deliveries.length === 0) return result;
  const pending = prepared.deliveries.filter((d) => d.status === 'pending');
  const slots = schedule(pending.length);
  const dueAt = new Map(pending.map((d, i) => [d.id, slots[i]!]));
  await createReplayedDeliveries(tx, {
    orgId: webhook.orgId,
    webhookId: webhook.id,
    now,
    deliveries: prepared.deliveries.map((d) => ({ ...d, nextRetryAt: dueAt.get(d.id) ?? d.nextRetryAt })),
  });
  result.due = pending.map((d) => ({ id: d.id, dueAt: dueAt.get(d.id)! }));
  result.disabled =
    prepared.broken.length > 0 ? await disableWebhookAutomatically(tx, webhook.id, 'template_error') : null;
  return result;
}
