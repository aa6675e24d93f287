import { v7 as uuidv7 } from 'uuid';
import type { SecretBox } from '@gatehook/core/encryption';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import { sanitiseText } from '@gatehook/core/sanitise';
import type { NewDelivery } from '@gatehook/db/delivery/create';
import { packBodies, type RenderedEvent } from './bodies';
import { secretsVersionOf } from './secrets-version';
import { sealBody } from './stored-body';
import type { LiveWebhook } from '../webhook-configs';
import { deliveryError } from '../state/delivery-error';

/** A delivery as fan-out prepared it: what is stored, and the body in clear for a first attempt in this process. */
export interface PreparedDelivery extends NewDelivery {
  /** Never stored: `bodyEncrypted` is. Null when there is no body. */
  body: string | null;
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
    secretsVersion: null,
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
  const secretsVersion = secretsVersionOf(webhook);
  for (const eventId of oversized)
    deliveries.push(
      failedDelivery(
        webhook.id,
        eventId,
        deliveryError('payload_too_large', 'the event alone exceeds the 1 MB body limit'),
      ),
    );
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
      secretsVersion,
      error: null,
      nextRetryAt: now,
    });
  }
  return deliveries;
}
