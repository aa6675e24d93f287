import { randomUUID } from 'node:crypto';
import type { SecretBox } from '@gatehook/core/encryption';
import type { Prisma } from '@gatehook/db/client';
import type { Webhook } from '@gatehook/db/generated/client';
import { packBodies, type RenderedEvent } from './bodies';
import { renderEnvelope, type AuditEventData } from './envelope';
import { disableWebhookAutomatically } from './webhook-state';

export type RenderResult = { ok: true; json: string } | { ok: false; error: string };

/**
 * Renders one event for one webhook into a JSON value. The default is the Standard Webhooks envelope; the
 * payload template engine plugs in here (a webhook with a template renders through it).
 */
export type EventRenderer = (webhook: Webhook, event: AuditEventData) => RenderResult;

/** The default envelope, rendered once per event however many webhooks receive it. */
export function envelopeRenderer(): EventRenderer {
  const cache = new Map<string, string>();
  return (_webhook, event) => {
    let json = cache.get(event.id);
    if (json === undefined) {
      json = renderEnvelope(event);
      cache.set(event.id, json);
    }
    return { ok: true, json };
  };
}

export interface CreatedDeliveries {
  /** Deliveries to schedule once the transaction commits. */
  scheduled: { id: string; dueAt: Date }[];
  /** Set when the webhook was disabled (template_error) and its `webhook.disabled` event needs fan-out. */
  disabled: { orgId: string; auditEventId: string } | null;
}

/**
 * Creates the deliveries of `events` for one webhook inside the caller's transaction: renders each event, packs
 * the rendered events into bodies of at most 1 MB by the webhook's format and max_events, and stores each body
 * encrypted. An event that does not render, or whose body alone exceeds 1 MB, becomes its own failed delivery
 * that carries the error and is not retryable; the other events still go out. If no event renders, the webhook
 * is disabled with reason template_error.
 */
export async function createDeliveries(
  tx: Prisma.TransactionClient,
  box: SecretBox,
  webhook: Webhook,
  events: readonly AuditEventData[],
  render: EventRenderer,
  now: Date,
): Promise<CreatedDeliveries> {
  const rows: Prisma.DeliveryCreateManyInput[] = [];
  const rendered: RenderedEvent[] = [];
  const failed = (eventIds: string[], error: string): Prisma.DeliveryCreateManyInput => ({
    id: randomUUID(),
    orgId: webhook.orgId,
    webhookId: webhook.id,
    status: 'failed',
    eventIds,
    eventCount: eventIds.length,
    error,
    createdAt: now,
  });

  for (const event of events) {
    const result = render(webhook, event);
    if (result.ok) rendered.push({ eventId: event.id, json: result.json });
    else rows.push(failed([event.id], `template_error: ${result.error}`));
  }

  const { bodies, oversized } = packBodies(webhook.format, rendered, webhook.maxEvents);
  for (const eventId of oversized) rows.push(failed([eventId], 'payload_too_large: the event alone exceeds the 1 MB body limit'));

  const scheduled: { id: string; dueAt: Date }[] = [];
  for (const body of bodies) {
    const id = randomUUID();
    rows.push({
      id,
      orgId: webhook.orgId,
      webhookId: webhook.id,
      status: 'pending',
      eventIds: body.eventIds,
      eventCount: body.eventIds.length,
      bodyEncrypted: box.encrypt(body.body),
      contentType: body.contentType,
      nextRetryAt: now,
      createdAt: now,
    });
    scheduled.push({ id, dueAt: now });
  }
  if (rows.length > 0) await tx.delivery.createMany({ data: rows });

  const disabled = rendered.length === 0 && events.length > 0 && rows.some((r) => r.error?.startsWith('template_error'))
    ? await disableWebhookAutomatically(tx, webhook.id, 'template_error')
    : null;
  return { scheduled, disabled };
}
