import { countBatchItems, readBatchItems } from '@gatehook/db/delivery/batch-buffer';
import { dropBatchItems } from '@gatehook/db/delivery/cancel';
import { commitBatch } from '@gatehook/db/delivery/create';
import { readEvents } from '@gatehook/db/outbox';
import { loadWebhook } from '@gatehook/db/webhook/read';
import { dispatchDeliveries } from './dispatch';
import type { EngineContext } from '../context';
import { disableWebhook } from '../state/webhook';

/**
 * After fan-out added entries to batch buffers: one delayed flush per webhook and linger window, and an immediate
 * one when a buffer holds a full batch (SPEC 6.5: a batch goes when full or after BATCH_LINGER_MS).
 */
export async function scheduleBatchFlushes(
  ctx: EngineContext,
  orgId: string,
  added: ReadonlyMap<string, { count: number; maxEvents: number }>,
  now: Date,
): Promise<void> {
  const bucket = Math.floor(now.getTime() / Math.max(ctx.batchLingerMs, 1));
  for (const [webhookId, { count, maxEvents }] of added) {
    await ctx.queues.flushBatch(webhookId, ctx.batchLingerMs, bucket, orgId);
    const waiting = count >= maxEvents ? count : await countBatchItems(ctx.pool, webhookId);
    if (waiting >= maxEvents) await ctx.queues.flushBatch(webhookId, 0, `full.${now.getTime()}`, orgId);
  }
}

/**
 * Turns a webhook's batch buffer into deliveries: full batches at once, and a partial batch once its oldest event
 * has waited BATCH_LINGER_MS (a partial batch not due yet gets a flush scheduled for when it is). Rendering and
 * encryption happen in the render pool before the one statement that takes the entries out of the buffer and stores the deliveries,
 * all or nothing, so concurrent flushes of one webhook never send an event twice.
 */
export async function flushBatch(
  ctx: EngineContext,
  webhookId: string,
  knownOrgId?: string,
): Promise<{ deliveries: number }> {
  const orgId = knownOrgId ?? (await loadWebhook(ctx.pool, webhookId))?.orgId;
  if (!orgId) return { deliveries: 0 };
  let total = 0;
  for (;;) {
    const webhook = await ctx.configs.get(orgId, webhookId);
    if (!webhook) return { deliveries: total }; // its buffer went with it
    if (webhook.status !== 'active') {
      // The change emptied the buffer; a fan-out that still saw the webhook active may have added to it since.
      await dropBatchItems(ctx.pool, webhookId);
      return { deliveries: total };
    }
    const items = await readBatchItems(ctx.pool, webhookId, webhook.maxEvents);
    const oldest = items[0];
    if (!oldest) return { deliveries: total };
    const now = new Date();
    const full = items.length >= webhook.maxEvents;
    if (!full && now.getTime() - oldest.createdAt.getTime() < ctx.batchLingerMs) {
      const due = oldest.createdAt.getTime() + ctx.batchLingerMs;
      await ctx.queues.flushBatch(webhookId, due - Date.now(), `at.${due}`, orgId);
      return { deliveries: total };
    }
    const eventIds = items.map((i) => i.eventId);
    const events = await readEvents(
      ctx.pool,
      orgId,
      items.map((i) => ({ id: i.eventId, receivedAt: i.receivedAt })),
    );
    const prepared = await ctx.render.plan(orgId, {
      webhooks: [webhook.stored],
      events,
      now,
      filter: 'all',
      buffer: false,
    });
    const taken = await commitBatch(ctx.pool, { orgId, webhookId, eventIds, now, deliveries: prepared.deliveries });
    if (!taken) return { deliveries: total }; // another flush took these entries
    const due = prepared.deliveries.filter((d) => d.status === 'pending').map((d) => d.id);
    await dispatchDeliveries(ctx, due, orgId);
    total += due.length;
    if (prepared.broken.length > 0) {
      await disableWebhook(ctx, orgId, webhookId, 'template_error');
      return { deliveries: total };
    }
    if (!full) return { deliveries: total };
  }
}
