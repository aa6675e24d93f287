import { createHmac } from 'node:crypto';
import { SIGNING_SECRET_PREFIX } from '@gatehook/core/signing-secret';
import { RESERVED_HEADERS } from '@gatehook/core/webhook-schema';

// Buffer.from(..., 'base64') skips characters it does not know, so a mangled secret would still yield a key and
// sign every delivery with something no receiver holds; refuse it instead.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FORBIDDEN_IN_VALUE = /[\r\n\0]/;

function signingKey(secret: string): Buffer {
  if (!secret.startsWith(SIGNING_SECRET_PREFIX)) {
    throw new TypeError(`signing secret must start with ${SIGNING_SECRET_PREFIX}`);
  }
  const encoded = secret.slice(SIGNING_SECRET_PREFIX.length);
  // An empty key would make the HMAC forgeable by anyone.
  if (encoded.length === 0 || !BASE64.test(encoded)) {
    throw new TypeError('signing secret is not valid base64 after its prefix');
  }
  return Buffer.from(encoded, 'base64');
}

/** One Standard Webhooks signature, `v1,<base64 HMAC-SHA256>` over `<msgId>.<timestamp>.<body>` (SPEC 5). */
export function signPayload(secret: string, msgId: string, timestampSeconds: number, body: string | Buffer): string {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    // Verifiers parse the header as an integer; a fractional or negative value could never verify.
    throw new RangeError(`timestampSeconds must be a non-negative integer, got ${timestampSeconds}`);
  }
  const mac = createHmac('sha256', signingKey(secret));
  mac.update(`${msgId}.${timestampSeconds}.`, 'utf8');
  // A Buffer body is signed as the exact bytes that go on the wire, never round-tripped through a string.
  if (typeof body === 'string') mac.update(body, 'utf8');
  else mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

/** The `webhook-signature` value: one signature per secret, space-separated, in the order given (newest first). */
export function signatureHeader(
  secrets: readonly string[],
  msgId: string,
  timestampSeconds: number,
  body: string | Buffer,
): string {
  if (secrets.length === 0) throw new RangeError('at least one signing secret is required');
  return secrets.map((secret) => signPayload(secret, msgId, timestampSeconds, body)).join(' ');
}

/** Inputs of {@link deliveryHeaders}. */
export interface DeliveryHeadersInput {
  /** The delivery's id; becomes `webhook-id`, stable across retries. */
  deliveryId: string;
  /** Unix seconds at send time, refreshed per attempt. */
  timestampSeconds: number;
  body: string | Buffer;
  /** Active signing secrets, newest first. */
  secrets: readonly string[];
  contentType: string;
  userAgent: string;
  /** The webhook's custom headers, decrypted. */
  custom: Record<string, string>;
}

/**
 * The headers of one attempt (SPEC 6.4): `content-type`, `user-agent`, `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, then the custom headers in their given order.
 *
 * Custom headers are validated on save; this is the second line of defence, so a custom header is silently
 * left out when its name is reserved (case-insensitively), is not an HTTP token, or repeats an earlier custom
 * name case-insensitively, and when its value holds CR, LF or NUL. Dropping beats throwing here: one bad stored
 * header must not stop every delivery of the webhook, and it can never override what the signature covers.
 */
export function deliveryHeaders(input: DeliveryHeadersInput): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': input.contentType,
    'user-agent': input.userAgent,
    'webhook-id': input.deliveryId,
    'webhook-timestamp': String(input.timestampSeconds),
    'webhook-signature': signatureHeader(input.secrets, input.deliveryId, input.timestampSeconds, input.body),
  };
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(input.custom)) {
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || !HTTP_TOKEN.test(name) || seen.has(lower)) continue;
    if (typeof value !== 'string' || FORBIDDEN_IN_VALUE.test(value)) continue;
    seen.add(lower);
    // defineProperty, because plain assignment of a header named `__proto__` would change the object's prototype
    // instead of adding a header.
    Object.defineProperty(headers, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return headers;
}
