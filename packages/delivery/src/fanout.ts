import type { SecretBox } from '@gatehook/core/encryption';
import type { Db } from '@gatehook/db/client';
import type { Webhook } from '@gatehook/db/generated/client';
import { createDeliveries, envelopeRenderer, type EventRenderer } from './deliveries';
import type { AuditEventData } from './envelope';
import { toEventData } from './event-data';
import type { DeliveryQueues } from './jobs';

/**
 * Decides whether an event that a webhook subscribes to passes its condition. The CEL condition engine plugs in
 * here; without one every subscribed event matches.
 */
export type ConditionMatcher = (webhook: Webhook, event: AuditEventData) => boolean;

export interface FanoutDeps {
  db: Db;
  box: SecretBox;
  queues: DeliveryQueues;
  batchLingerMs: number;
  /** A fresh renderer per pass lets the default envelope be rendered once per event. */
  renderer?: () => EventRenderer;
  matcher?: ConditionMatcher;
}

/** Whether a webhook's subscription covers an action (`*` or the exact name). */
export function subscribes(webhook: Pick<Webhook, 'events'>, action: string): boolean {
  return webhook.events.includes('*') || webhook.events.includes(action);
}

/** Whether events of this webhook are sent one by one, or gathered in the batch buffer first. */
export function batches(webhook: Pick<Webhook, 'format' | 'maxEvents'>): boolean {
  return webhook.format !== 'single' && webhook.maxEvents > 1;
}

/** Schedules what a committed transaction created. */
async function schedule(deps: FanoutDeps, scheduled: { id: string; dueAt: Date }[], disabled: { orgId: string; auditEventId: string }[]): Promise<void> {
  await deps.queues.deliverMany(scheduled);
  for (const d of disabled) await deps.queues.fanout(d.orgId, [d.auditEventId]);
}

/**
 * Fans committed audit events out to the active webhooks of their organisation that subscribe to them: one
 * delivery per event for unbatched webhooks, a batch-buffer entry otherwise. Events are claimed with row locks
 * and marked fanned out in the same transaction, so a duplicated job or a reconciler pass never creates a
 * delivery twice. Webhooks only receive events received after they became active (created, enabled, resumed).
 */
export async function fanOut(deps: FanoutDeps, orgId: string, eventIds: readonly string[]): Promise<{ events: number; deliveries: number }> {
  const now = new Date();
  const render = (deps.renderer ?? envelopeRenderer)();
  const scheduled: { id: string; dueAt: Date }[] = [];
  const disabled: { orgId: string; auditEventId: string }[] = [];
  const batched = new Map<string, { webhook: Webhook; count: number }>();
  let claimedCount = 0;

  await deps.db.$transaction(
    async (tx) => {
      const claimed = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM audit_events
        WHERE org_id = ${orgId}::uuid AND id = ANY(${[...eventIds]}::uuid[]) AND fanned_out_at IS NULL
        ORDER BY id FOR UPDATE SKIP LOCKED`;
      if (claimed.length === 0) return;
      claimedCount = claimed.length;
      const ids = claimed.map((c) => c.id);
      const events = await tx.auditEvent.findMany({ where: { orgId, id: { in: ids } }, orderBy: { id: 'asc' } });
      const webhooks = await tx.webhook.findMany({ where: { orgId, status: 'active' } });

      const direct = new Map<string, AuditEventData[]>();
      const items: { webhookId: string; eventId: string; orgId: string }[] = [];
      for (const row of events) {
        const data = toEventData(row);
        for (const webhook of webhooks) {
          if (!subscribes(webhook, row.action) || row.receivedAt < webhook.activeSince) continue;
          if (deps.matcher && !deps.matcher(webhook, data)) continue;
          if (batches(webhook)) {
            items.push({ webhookId: webhook.id, eventId: row.id, orgId });
            const entry = batched.get(webhook.id) ?? { webhook, count: 0 };
            entry.count += 1;
            batched.set(webhook.id, entry);
          } else {
            const list = direct.get(webhook.id) ?? [];
            list.push(data);
            direct.set(webhook.id, list);
          }
        }
      }

      for (const webhook of webhooks) {
        const list = direct.get(webhook.id);
        if (!list) continue;
        const created = await createDeliveries(tx, deps.box, webhook, list, render, now);
        scheduled.push(...created.scheduled);
        if (created.disabled) disabled.push(created.disabled);
      }
      if (items.length > 0) await tx.batchItem.createMany({ data: items, skipDuplicates: true });
      await tx.auditEvent.updateMany({ where: { orgId, id: { in: ids } }, data: { fannedOutAt: now } });
    },
    { timeout: 60_000, maxWait: 10_000 },
  );

  await schedule(deps, scheduled, disabled);
  for (const { webhook } of batched.values()) {
    // One delayed flush per linger window; a full batch is flushed at once by the flush of the same window.
    await deps.queues.flushBatch(webhook.id, deps.batchLingerMs, Math.floor(now.getTime() / Math.max(deps.batchLingerMs, 1)));
    const waiting = await deps.db.batchItem.count({ where: { webhookId: webhook.id } });
    if (waiting >= webhook.maxEvents) await deps.queues.flushBatch(webhook.id, 0, `full.${now.getTime()}`);
  }
  return { events: claimedCount, deliveries: scheduled.length };
}

/**
 * Turns a webhook's batch buffer into deliveries: full batches at once, and a partial batch once its oldest
 * event has waited BATCH_LINGER_MS. Items are claimed with SKIP LOCKED, so concurrent flushes of one webhook
 * take disjoint events. A partial batch that is not due yet gets a flush scheduled for when it is.
 */
export async function flushBatch(deps: FanoutDeps, webhookId: string): Promise<{ deliveries: number }> {
  const render = (deps.renderer ?? envelopeRenderer)();
  let total = 0;
  for (;;) {
    const now = new Date();
    const scheduled: { id: string; dueAt: Date }[] = [];
    const disabled: { orgId: string; auditEventId: string }[] = [];
    let dueLater: Date | null = null;
    let full = false;

    const progressed = await deps.db.$transaction(
      async (tx) => {
        const webhook = await tx.webhook.findUnique({ where: { id: webhookId } });
        if (!webhook) return false;
        if (webhook.status !== 'active') {
          await tx.batchItem.deleteMany({ where: { webhookId } });
          return false;
        }
        const items = await tx.$queryRaw<{ event_id: string; created_at: Date }[]>`
          SELECT event_id, created_at FROM batch_items WHERE webhook_id = ${webhookId}::uuid
          ORDER BY created_at, event_id LIMIT ${webhook.maxEvents} FOR UPDATE SKIP LOCKED`;
        const oldest = items[0];
        if (!oldest) return false;
        full = items.length >= webhook.maxEvents;
        if (!full && now.getTime() - oldest.created_at.getTime() < deps.batchLingerMs) {
          dueLater = new Date(oldest.created_at.getTime() + deps.batchLingerMs);
          return false;
        }
        const ids = items.map((i) => i.event_id);
        const rows = await tx.auditEvent.findMany({ where: { orgId: webhook.orgId, id: { in: ids } } });
        const created = await createDeliveries(tx, deps.box, webhook, rows.map(toEventData), render, now);
        scheduled.push(...created.scheduled);
        if (created.disabled) disabled.push(created.disabled);
        await tx.batchItem.deleteMany({ where: { webhookId, eventId: { in: ids } } });
        return true;
      },
      { timeout: 60_000, maxWait: 10_000 },
    );

    await schedule(deps, scheduled, disabled);
    total += scheduled.length;
    if (dueLater !== null) {
      const due: Date = dueLater;
      await deps.queues.flushBatch(webhookId, due.getTime() - Date.now(), `at.${due.getTime()}`);
    }
    if (!progressed || !full) return { deliveries: total };
  }
}
