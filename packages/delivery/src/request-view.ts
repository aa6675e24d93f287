import type { SecretBox } from '@gatehook/core/encryption';
import { USER_AGENT } from '@gatehook/core/version';
import { RESERVED_HEADERS } from '@gatehook/core/webhook-schema';
import { REDACTED, Redactor } from './render/redaction';
import { deliveryHeaders } from './render/signing';
import { openBody } from './render/stored-body';
import { WEBHOOK_CONFIG_TTL_MS } from './webhook-configs';

/** The stored secrets of a webhook, encrypted, as its row holds them. */
export interface WebhookSecrets {
  id: string;
  secretEncrypted: string;
  previousSecretEncrypted: string | null;
  previousSecretValidUntil: Date | null;
  varsEncrypted: string | null;
  headersEncrypted: string | null;
  /** When a var or header value last changed; null when never since creation. */
  secretsChangedAt: Date | null;
  /** OAuth 2.0 destination authentication (CONTRACT 20): its requests carry an access token, shown redacted. */
  auth?: unknown;
}

/** The request of a delivery's last attempt as the operator's view shows it (CONTRACT 17). */
export interface RequestView {
  content_type: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * The signing secrets in force at `at`, newest first, as far as the webhook's row still holds them. A rotation at
 * R stores the replaced secret as `previous` valid until R + overlap, so R is known: an attempt made after R was
 * signed with the current secret (and the previous one while it was valid); an attempt made before R was signed
 * with what is now `previous`. The secret before that one, if it was still in its own overlap then, is no longer
 * stored and cannot be shown.
 */
export function secretsValidAt(
  secrets: { current: string; previous: string | null; previousValidUntil: Date | null },
  at: Date,
  rotationOverlapSeconds: number,
): string[] {
  const { current, previous, previousValidUntil } = secrets;
  if (previous === null || previousValidUntil === null) return [current];
  const rotatedAt = previousValidUntil.getTime() - rotationOverlapSeconds * 1000;
  if (at.getTime() < rotatedAt) return [previous];
  return previousValidUntil > at ? [current, previous] : [current];
}

/**
 * Rebuilds the request a delivery's last attempt sent: the stored body, and the headers `prepareRequest` made at
 * `attemptAt` (webhook-timestamp is the attempt's start in whole seconds; webhook-signature is recomputed over the
 * body as sent, so it verifies against it when nothing was redacted). Then every custom header value, and every
 * variable or custom header value found in the body, becomes `[redacted]`. Custom headers are the webhook's
 * current ones. A body rendered before a variable or header value last changed may hold a value that is no longer
 * stored, so cannot be looked for: such a body is withheld whole (`[redacted]`), and so is one created up to
 * WEBHOOK_CONFIG_TTL_MS after the change, which a worker may have rendered from its cached configuration.
 */
export function requestView(
  box: SecretBox,
  webhook: WebhookSecrets,
  delivery: { id: string; createdAt: Date; bodyEncrypted: string; contentType: string | null; attemptAt: Date },
  rotationOverlapSeconds: number,
): RequestView {
  const row = webhook.id;
  const body = openBody(box, delivery.bodyEncrypted, delivery.id);
  const vars = webhook.varsEncrypted ? box.decryptMap(webhook.varsEncrypted, { column: 'webhooks.vars_encrypted', row }) : {};
  const custom = webhook.headersEncrypted ? box.decryptMap(webhook.headersEncrypted, { column: 'webhooks.headers_encrypted', row }) : {};
  const secrets = secretsValidAt(
    {
      current: box.decrypt(webhook.secretEncrypted, { column: 'webhooks.secret_encrypted', row }),
      previous: webhook.previousSecretEncrypted ? box.decrypt(webhook.previousSecretEncrypted, { column: 'webhooks.previous_secret_encrypted', row }) : null,
      previousValidUntil: webhook.previousSecretValidUntil,
    },
    delivery.attemptAt,
    rotationOverlapSeconds,
  );
  const contentType = delivery.contentType ?? 'application/json';
  const sent = deliveryHeaders({
    deliveryId: delivery.id,
    timestampSeconds: Math.floor(delivery.attemptAt.getTime() / 1000),
    body,
    secrets,
    contentType,
    userAgent: USER_AGENT,
    custom,
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(sent)) {
    // defineProperty: a custom header may be named `__proto__` (see deliveryHeaders).
    Object.defineProperty(headers, name, { value: RESERVED_HEADERS.has(name) ? value : REDACTED, enumerable: true, writable: true, configurable: true });
  }
  // The access token is added by the egress client as the request leaves; it is never kept, so never shown.
  if (webhook.auth !== undefined && webhook.auth !== null) headers.authorization = REDACTED;
  if (webhook.secretsChangedAt !== null && delivery.createdAt.getTime() <= webhook.secretsChangedAt.getTime() + WEBHOOK_CONFIG_TTL_MS) return { content_type: contentType, headers, body: REDACTED };
  const redactor = new Redactor([...Object.values(vars), ...Object.values(custom)]);
  return { content_type: contentType, headers, body: redactor.redact(body) };
}
