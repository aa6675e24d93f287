import { commitFanout } from '@gatehook/db/delivery/create';
import { readPendingEvents } from '@gatehook/db/outbox';
import { scheduleBatchFlushes } from './batch-flush';
import type { EngineContext } from '../context';
import type { DeliveryQueues } from '../queues/producer';
import { DELIVER_CHUNK } from '../tunables';
import { emptyPlan, mayChoose } from '../render/plan';
import { disableWebhook } from '../state/webhook';

/**
 * Fans committed audit events out to the active webhooks of their organisation that subscribe to them and whose
 * condition matches: one delivery per event for unbatched webhooks; for batching ones, full batches as deliveries at once
 * and the rest (fewer than max_events) as batch-buffer entries. Conditions, rendering and encryption run before
 * any statement, in the render pool (render/plan.ts) against the cached configuration; then one statement claims
 * the events and stores what was prepared for exactly the events it claimed, so a duplicated job or a
 * reconciler pass never creates a delivery twice. Webhooks only receive events received after the instant they became active (so not the event of that change).
 */
export async function fanOut(
  ctx: EngineContext,
  orgId: string,
  eventIds: readonly string[],
): Promise<{ events: number; deliveries: number }> {
  const done = await fanOutEvents(ctx, orgId, eventIds);
  return { events: done.claimed.length, deliveries: done.created.length };
}

/** What one fan-out did: the events it claimed, and the events of each delivery it created. */
export interface FanoutDone {
  claimed: readonly string[];
  created: readonly (readonly string[])[];
}

/** fanOut, telling which events it claimed and which events each delivery it created carries. */
export async function fanOutEvents(
  ctx: EngineContext,
  orgId: string,
  eventIds: readonly string[],
): Promise<FanoutDone> {
  const webhooks = (await ctx.configs.ofOrg(orgId)).filter((w) => w.status === 'active');
  const now = new Date();
  if (webhooks.length === 0) {
    // Nobody to deliver to: the events are claimed without being read.
    const committed = await commitFanout(ctx.pool, { orgId, eventIds, now, deliveries: [], batchItems: [] });
    return { claimed: committed.claimed, created: [] };
  }
  const events = await readPendingEvents(ctx.pool, orgId, eventIds);
  if (events.length === 0) return { claimed: [], created: [] };
  if (ctx.onStage)
    for (const e of events) ctx.onStage('ingest', Math.max(0, now.getTime() - e.receivedAt.getTime()) / 1000);
  // Matching, rendering, packing and sealing run in the render pool, fairly shared between organisations; this
  // event loop keeps the reads, the commit and the dispatch. The pool gets only the webhooks that subscribe to one
  // of these events' actions and were active before one of them came.
  const candidates = mayChoose(webhooks, events, 'live');
  const plan =
    candidates.length === 0
      ? emptyPlan()
      : await ctx.render.plan(orgId, {
          webhooks: candidates.map((w) => w.stored),
          events,
          now,
          filter: 'live',
          buffer: true,
        });
  const { deliveries, batchItems, broken } = plan;
  const batched = new Map(plan.batched);

  // Deliveries this process will attempt itself are created leased: their first attempt needs no lease statement.
  // A large fan-out goes to the queue in chunks instead, so that no run holds more than a job would.
  const pending = deliveries.filter((d) => d.status === 'pending').length;
  const local = pending > 0 && pending <= DELIVER_CHUNK && ctx.local ? await ctx.local.claim(pending, orgId) : null;
  let committed: Awaited<ReturnType<typeof commitFanout>>;
  try {
    committed = await commitFanout(ctx.pool, {
      orgId,
      eventIds: events.map((e) => e.data.id),
      now,
      deliveries,
      batchItems,
      leasedUntil: local?.leaseUntil ?? null,
    });
  } catch (error) {
    local?.cancel();
    throw error;
  }
  const created = new Set(committed.deliveries);
  const due = deliveries.filter((d) => d.status === 'pending' && created.has(d.id));
  if (local) {
    local.start(
      due.map((d) => ({
        id: d.id,
        orgId,
        webhookId: d.webhookId,
        status: 'pending',
        cycleAttempts: 0,
        throttledStreak: 0,
        bodyEncrypted: d.bodyEncrypted,
        body: d.body,
        contentType: d.contentType,
        leasedUntil: local.leaseUntil,
        awaitingFirstSince: now,
      })),
    );
  } else
    await ctx.queues.deliverNow(
      due.map((d) => d.id),
      orgId,
    );
  if (committed.claimed.length > 0) {
    for (const webhookId of broken) await disableWebhook(ctx, orgId, webhookId, 'template_error');
    // The buffers this call added to: its own rest, or a full batch whose events a racing call partly claimed.
    const buffered = new Map([...batched].filter(([webhookId]) => committed.buffered.includes(webhookId)));
    await scheduleBatchFlushes(ctx, orgId, buffered, now);
  }
  return { claimed: committed.claimed, created: deliveries.filter((d) => created.has(d.id)).map((d) => d.eventIds) };
}

/** A failed fan-out run's error as logged and recorded: its name and message. */
export function describeFailure(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
