import { v7 as uuidv7 } from 'uuid';
import type { SecretBox } from '@gatehook/core/encryption';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import { sanitiseText } from '@gatehook/core/sanitise';
import type { NewDelivery } from '@gatehook/db/delivery/create';
import { packBodies, type RenderedEvent } from './bodies';
import { sealBody } from './stored-body';
import type { AuditEventData } from './envelope';
import type { LiveWebhook } from '../webhook-configs';
import { deliveryError } from '../state/delivery-error';

/** A delivery as fan-out prepared it: what is stored, and the body in clear for a first attempt in this process. */
export interface PreparedDelivery extends NewDelivery {
  /** Never stored: `bodyEncrypted` is. Null when there is no body. */
  body: string | null;
}

export interface PreparedDeliveries {
  deliveries: PreparedDelivery[];
  /** Every event failed to render: the webhook is to be disabled with reason template_error. */
  templateBroken: boolean;
}

/**
 * Prepares the deliveries of `events` for one webhook, outside any transaction: renders each event, packs the
 * rendered events into bodies of at most 1 MB by the webhook's format and max_events, and seals each body for storage
 * (stored-body.ts). An
 * event that does not render, or whose body alone exceeds 1 MB, becomes its own failed delivery that carries the
 * error and is not retryable; the other events still go out.
 */
export function prepareDeliveries(
  webhook: LiveWebhook,
  events: readonly AuditEventData[],
  box: SecretBox,
  now: Date,
  envelopes?: Map<string, string>,
): PreparedDeliveries {
  const deliveries: PreparedDelivery[] = [];
  const rendered: RenderedEvent[] = [];
  for (const event of events) {
    const result = webhook.render(event, envelopes);
    if (result.ok) rendered.push({ eventId: event.id, json: result.json });
    else deliveries.push(failedDelivery(webhook.id, event.id, deliveryError('template_error', result.error)));
  }
  deliveries.push(...packDeliveries(webhook, rendered, box, now));
  return { deliveries, templateBroken: events.length > 0 && rendered.length === 0 };
}

/** The failed delivery of one event that produced no body: it carries the error and is not retryable. */
export function failedDelivery(webhookId: string, eventId: string, error: string): PreparedDelivery {
  return {
    id: uuidv7(),
    webhookId,
    eventIds: [eventId],
    status: 'failed',
    bodyEncrypted: null,
    body: null,
    contentType: null,
    // A render error quotes template text of any length: stored, it goes through the one sanitiser.
    error: sanitiseText(error),
    nextRetryAt: null,
  };
}

/**
 * Packs one webhook's rendered events into bodies of at most 1 MB by its format and max_events, and seals each
 * body for storage: one pending delivery per body, and a failed one per event whose body alone exceeds 1 MB.
 */
export function packDeliveries(
  webhook: Pick<StoredWebhook, 'id' | 'format' | 'maxEvents' | 'varNames' | 'varsEncrypted' | 'headersEncrypted'>,
  rendered: readonly RenderedEvent[],
  box: SecretBox,
  now: Date,
): PreparedDelivery[] {
  const deliveries: PreparedDelivery[] = [];
  const { bodies, oversized } = packBodies(webhook.format, rendered, webhook.maxEvents);
  for (const eventId of oversized) deliveries.push(failedDelivery(webhook.id, eventId, deliveryError('payload_too_large', 'the event alone exceeds the 1 MB body limit')));
  for (const body of bodies) {
    const id = uuidv7();
    deliveries.push({
      id,
      webhookId: webhook.id,
      eventIds: body.eventIds,
      status: 'pending',
      bodyEncrypted: sealBody(box, body.body, id, webhook),
      body: body.body,
      contentType: body.contentType,
      error: null,
      nextRetryAt: now,
    });
  }
  return deliveries;
}
