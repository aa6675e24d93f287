import { v7 as uuidv7 } from 'uuid';
import type { SecretBox } from '@gatehook/core/encryption';
import { sanitiseText } from '@gatehook/core/sanitise';
import type { NewDelivery } from '@gatehook/db/deliveries';
import { packBodies, type RenderedEvent } from './bodies';
import { sealBody } from './stored-body';
import type { AuditEventData } from './envelope';
import type { LiveWebhook } from './webhook-configs';

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
  const failed = (eventId: string, error: string): PreparedDelivery => ({
    id: uuidv7(),
    webhookId: webhook.id,
    eventIds: [eventId],
    status: 'failed',
    bodyEncrypted: null,
    body: null,
    contentType: null,
    // A render error quotes template text of any length: stored, it goes through the one sanitiser.
    error: sanitiseText(error),
    nextRetryAt: null,
  });

  let renderFailures = 0;
  for (const event of events) {
    const result = webhook.render(event, envelopes);
    if (result.ok) rendered.push({ eventId: event.id, json: result.json });
    else {
      renderFailures += 1;
      deliveries.push(failed(event.id, `template_error: ${result.error}`));
    }
  }

  const { bodies, oversized } = packBodies(webhook.format, rendered, webhook.maxEvents);
  for (const eventId of oversized) deliveries.push(failed(eventId, 'payload_too_large: the event alone exceeds the 1 MB body limit'));
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
  return { deliveries, templateBroken: events.length > 0 && renderFailures === events.length };
}
