import { LRUCache } from 'lru-cache';
import { threadClock } from '@gatehook/core/cpu-deadline';
import type { SecretBox } from '@gatehook/core/encryption';
import { USER_AGENT } from '@gatehook/core/version';
import { RESERVED_HEADERS } from '@gatehook/core/webhook-schema';
import { REDACTED, REDACTION_BUDGET_MS, Redactor } from './render/redaction';
import { deliveryHeaders } from './render/signing';
import { secretsVersionOf } from './render/secrets-version';
import { openBody } from './render/stored-body';
import { REDACTORS_KEPT, REDACTOR_CHARS_KEPT, WEBHOOK_CONFIG_TTL_MS } from './tunables';

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

/** A delivery as the request view reads it. */
export interface SentDelivery {
  id: string;
  createdAt: Date;
  bodyEncrypted: string;
  contentType: string | null;
  /** The version of the webhook's var and header values the body was rendered with; null when not recorded. */
  secretsVersion: string | null;
  /** The start of the last attempt. */
  attemptAt: Date;
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
 * variable or custom header value found in the body, becomes `[redacted]` (redaction.ts, within
 * REDACTION_BUDGET_MS of CPU time). Custom headers are the webhook's current ones.
 *
 * The body is searched only for the values it was rendered with: a delivery records the version of the webhook's
 * secret values its body was rendered with (`deliveries.secrets_version`, secrets-version.ts), and a body rendered
 * with other values than the webhook holds now may carry a value that is no longer stored, so cannot be looked for:
 * it is withheld whole (`[redacted]`), whenever it was rendered or stored. A delivery without a recorded version
 * (created before versions were recorded) is withheld when it was created up to WEBHOOK_CONFIG_TTL_MS after the last
 * change of those values, which a worker may have rendered from its cached configuration.
 */
export class RequestViews {
  private readonly redactors = new LRUCache<string, Redactor>({
    max: REDACTORS_KEPT,
    maxSize: REDACTOR_CHARS_KEPT,
    sizeCalculation: (r) => Math.max(1, r.size),
  });

  constructor(
    private readonly box: SecretBox,
    private readonly budgetMs: number = REDACTION_BUDGET_MS,
  ) {}

  /** The request view of `delivery`, a delivery of `webhook`. */
  view(webhook: WebhookSecrets, delivery: SentDelivery, rotationOverlapSeconds: number): RequestView {
    const { box } = this;
    const row = webhook.id;
    const body = openBody(box, delivery.bodyEncrypted, delivery.id);
    const custom = webhook.headersEncrypted
      ? box.decryptMap(webhook.headersEncrypted, { column: 'webhooks.headers_encrypted', row })
      : {};
    const secrets = secretsValidAt(
      {
        current: box.decrypt(webhook.secretEncrypted, { column: 'webhooks.secret_encrypted', row }),
        previous: webhook.previousSecretEncrypted
          ? box.decrypt(webhook.previousSecretEncrypted, { column: 'webhooks.previous_secret_encrypted', row })
          : null,
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
      Object.defineProperty(headers, name, {
        value: RESERVED_HEADERS.has(name) ? value : REDACTED,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    // The access token is added by the egress client as the request leaves; it is never kept, so never shown.
    if (webhook.auth !== undefined && webhook.auth !== null) headers.authorization = REDACTED;
    const current = secretsVersionOf(webhook);
    const renderedWithOthers =
      delivery.secretsVersion === null
        ? webhook.secretsChangedAt !== null &&
          delivery.createdAt.getTime() <= webhook.secretsChangedAt.getTime() + WEBHOOK_CONFIG_TTL_MS
        : delivery.secretsVersion !== current;
    if (renderedWithOthers) return { content_type: contentType, headers, body: REDACTED };
    return {
      content_type: contentType,
      headers,
      body: this.redactorOf(webhook, current, custom).redact(body, threadClock.deadline(this.budgetMs)),
    };
  }

  /** The redactor of a version of a webhook's values, made once per version. */
  private redactorOf(webhook: WebhookSecrets, version: string, custom: Record<string, string>): Redactor {
    const key = `${webhook.id}:${version}`;
    let redactor = this.redactors.get(key);
    if (!redactor) {
      const vars = webhook.varsEncrypted
        ? this.box.decryptMap(webhook.varsEncrypted, { column: 'webhooks.vars_encrypted', row: webhook.id })
        : {};
      redactor = new Redactor([...Object.values(vars), ...Object.values(custom)]);
      this.redactors.set(key, redactor);
    }
    return redactor;
  }
}
