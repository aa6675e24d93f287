import { attemptSpan } from '@gatehook/core/tracing';
import type { SendResult } from '@gatehook/egress/client';
import type { EngineContext } from '../context';
import type { FlowControl, Slot } from '../flow/flow-control';
import type { RunnableDelivery } from '../local-run';
import { signedRequest, type PreparedRequest, type Sender } from '../render/request';
import { openBody } from '../render/stored-body';
import { deliveryError, stoppedBy } from '../state/delivery-error';
import { DUE_AGAIN_EARLY_MS } from '../tunables';
import type { LiveWebhook } from '../webhook-configs';

/*
 * The stages of one attempt, in order: checkRunnable → acquire → prepare → send → record (record.ts). Each says
 * what can come of it in its result type; the runner (runner.ts) reads as that sequence.
 */

/** Whether a leased delivery may be attempted, and its webhook when it may. */
export type Runnable = { kind: 'runnable'; webhook: LiveWebhook } | { kind: 'cancelled'; reason: string };

/** A send slot, or the delivery deferred: it comes back at `until` and is recorded due from `dueAt`. */
export type Acquire = { kind: 'slot'; slot: Slot } | { kind: 'deferred'; until: Date; dueAt: Date };

/** The signed request, or why the delivery is cancelled instead (its stored body cannot be read). */
export type Prepared = { kind: 'prepared'; request: PreparedRequest } | { kind: 'cancelled'; reason: string };

/** The receiver's answer; the sender reports every failure (timeout, refused, policy) as an answer too. */
export type Sent = { kind: 'answered'; result: SendResult };

/** Checks that a leased delivery can be sent: its webhook exists and is active, and its body is stored and readable. */
export async function checkRunnable(configs: EngineContext['configs'], delivery: RunnableDelivery): Promise<Runnable> {
  const webhook = await configs.get(delivery.orgId, delivery.webhookId);
  if (!webhook) return { kind: 'cancelled', reason: deliveryError('webhook_deleted') };
  if (webhook.status !== 'active') return { kind: 'cancelled', reason: deliveryError(stoppedBy(webhook.status)) };
  if (delivery.bodyEncrypted === null) return { kind: 'cancelled', reason: deliveryError('no_body') };
  if (webhook.unreadable) return { kind: 'cancelled', reason: webhook.unreadable };
  return { kind: 'runnable', webhook };
}

/** Asks flow control for a slot until `deadline` (the slot comes first, fairly; the request is signed once it has). */
export async function acquire(
  flow: FlowControl,
  delivery: RunnableDelivery,
  webhook: LiveWebhook,
  deadline: number,
): Promise<Acquire> {
  const acquired = await flow.acquire(
    {
      deliveryId: delivery.id,
      orgId: delivery.orgId,
      webhookId: webhook.id,
      origin: webhook.origin,
      rateLimitPerSecond: webhook.rateLimitPerSecond,
    },
    deadline,
  );
  if (acquired.kind === 'slot') return acquired;
  // One that may be recalled is due from now (a lease needs it due), one that may not from its time.
  return {
    kind: 'deferred',
    until: acquired.until,
    dueAt: dueAgain(acquired.recallable ? new Date() : acquired.until),
  };
}

/** Prepares one delivery's request (pure but for decryption): its body, and headers signed with the live secrets. */
export function prepareRequest(
  deps: Pick<EngineContext, 'box'>,
  webhook: LiveWebhook,
  delivery: RunnableDelivery,
  now: Date,
): PreparedRequest {
  const body = delivery.body ?? openBody(deps.box, delivery.bodyEncrypted ?? '', delivery.id);
  return signedRequest(
    webhook,
    { id: delivery.id, body, contentType: delivery.contentType ?? 'application/json' },
    now,
  );
}

/** {@link prepareRequest}, or the delivery cancelled when its stored body cannot be decrypted. */
export function prepare(
  deps: Pick<EngineContext, 'box'>,
  webhook: LiveWebhook,
  delivery: RunnableDelivery,
  now: Date,
): Prepared {
  try {
    return { kind: 'prepared', request: prepareRequest(deps, webhook, delivery, now) };
  } catch {
    return {
      kind: 'cancelled',
      reason: deliveryError('secret_unreadable', 'the stored body cannot be decrypted with the configured keys'),
    };
  }
}

/** Sends the request in a span of its own (CONTRACT 17) and returns the answer. */
export async function send(
  sender: Sender,
  delivery: RunnableDelivery,
  webhook: LiveWebhook,
  request: PreparedRequest,
  startedAt: Date,
): Promise<Sent> {
  const span = attemptSpan({
    orgId: delivery.orgId,
    webhookId: webhook.id,
    deliveryId: delivery.id,
    origin: webhook.origin,
  });
  const result = await sender({
    url: request.url,
    headers: span.headers(request.headers),
    body: request.body,
    clientCertificate: request.clientCertificate,
    auth: request.auth,
  }).catch(
    // The sender reports failures as results; an exception is a bug there, recorded as a network error.
    (): SendResult => ({
      statusCode: 0,
      error: 'network_error',
      durationMs: Date.now() - startedAt.getTime(),
      responseSnippet: '',
      retryAfter: null,
    }),
  );
  span.end(result);
  return { kind: 'answered', result };
}

/** The due time recorded for a delivery deferred until `at` ({@link DUE_AGAIN_EARLY_MS}). */
function dueAgain(at: Date): Date {
  return new Date(at.getTime() - DUE_AGAIN_EARLY_MS);
}
