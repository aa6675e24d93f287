import { randomUUID } from 'node:crypto';
import type { SecretBox } from '@gatehook/core/encryption';
import { AppError } from '@gatehook/core/errors';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import type { TestResult } from '@gatehook/core/webhook-schema';
import { signedRequest, type Sender } from '../render/request';
import { testEvent, type TestRenderer } from '../render/test-body';
import { toLiveWebhook, type LiveWebhook } from '../webhook-configs';
import { deliveryError } from '../state/delivery-error';
import type { WebhookPace } from '../flow/webhook-pace';
import { TEST_SEND_TURN_WAIT_MS } from '../tunables';

/**
 * Sends a `webhook.test` event to one webhook whatever its status, ignoring its condition but using its template,
 * format, headers and secrets, and waits for the answer (SPEC 4.2). It neither starts nor ends a failure streak.
 * The body is rendered by `render` (the API's render pool); signing and the request happen here.
 */
export async function sendTestEvent(
  deps: { box: SecretBox; send: Sender; render: TestRenderer; pace?: Pick<WebhookPace, 'take'> },
  stored: StoredWebhook,
): Promise<TestResult> {
  const now = new Date();
  const webhook = toLiveWebhook(stored, deps.box);
  if (webhook.unreadable) return { success: false, error: webhook.unreadable, duration_ms: 0 };
  const body = await deps.render(stored, testEvent(webhook, now));
  if (!body.ok) return { success: false, error: body.error, duration_ms: 0 };
  // Like a delivery, the request takes a turn of the webhook's rate right before it is signed and sent.
  if (webhook.rateLimitPerSecond !== null && deps.pace) await takeTestTurn(deps.pace, webhook);

  const request = signedRequest(webhook, { id: randomUUID(), body: body.body, contentType: body.contentType }, now);
  const result = await deps.send({
    url: request.url,
    headers: request.headers,
    body: request.body,
    clientCertificate: request.clientCertificate,
    auth: request.auth,
  });
  return {
    success: result.error === null && result.statusCode >= 200 && result.statusCode < 300,
    ...(result.statusCode > 0 ? { status_code: result.statusCode } : {}),
    ...(result.error ? { error: result.error } : {}),
    duration_ms: Math.round(result.durationMs),
    ...(result.statusCode > 0 ? { response_snippet: result.responseSnippet } : {}),
  };
}

/**
 * Takes a turn of the webhook's rate for a test send, shared with its deliveries on every worker (CONTRACT 18): waits
 * for one at most {@link TEST_SEND_TURN_WAIT_MS} away, else throws 429 `rate_limited` with Retry-After in whole
 * seconds until the turn it was told.
 */
async function takeTestTurn(pace: Pick<WebhookPace, 'take'>, webhook: LiveWebhook): Promise<void> {
  const perSecond = webhook.rateLimitPerSecond!;
  let later = await pace.take(webhook.orgId, webhook.id, perSecond);
  if (later !== null && later.getTime() - Date.now() <= TEST_SEND_TURN_WAIT_MS) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, later!.getTime() - Date.now())));
    later = await pace.take(webhook.orgId, webhook.id, perSecond);
  }
  if (later === null) return;
  const seconds = Math.max(1, Math.ceil((later.getTime() - Date.now()) / 1000));
  throw new AppError(
    'rate_limited',
    `The webhook's rate_limit_per_second has no turn free for a test send; retry in ${seconds} s`,
    undefined,
    { 'retry-after': String(seconds) },
  );
}
