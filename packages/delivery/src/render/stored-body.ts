import { createHash } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { SecretBox, SecretPlace } from '@gatehook/core/encryption';

/**
 * A delivery's body as stored (deliveries.body_encrypted): encrypted always, bound to its delivery's row, and
 * compressed first when it is large and its webhook has no variables.
 * A batch body (ndjson or a JSON array of up to max_events rendered events) repeats the same keys and values line
 * after line: deflated it is a tenth of its size, so the fan-out statement carries, and Postgres parses, toasts and
 * writes to its WAL, a tenth of the bytes. Small bodies (a single event) are stored as before: compression would
 * save little, and the cost would be paid on every delivery.
 *
 * Compression before encryption makes the stored length depend on how much of the body repeats itself. A body
 * rendered with `.Vars` holds a tenant's secret next to event text that whoever can write audit events chooses:
 * compressed, its length would tell them, guess by guess, how much of the secret their text matched (the CRIME
 * attack, read off the database or a backup). So a body of a webhook that has any variable is never compressed,
 * whether or not its template uses them: the rule reads one field and cannot be wrong.
 *
 * A compressed body is `COMPRESSED_PREFIX` followed by the encryption token of the deflated bytes; anything else is
 * the token of the body itself, so every body stored before compression existed still opens.
 *
 * A body also records the version of the secret values it was rendered with ({@link secretsVersionOf}): the
 * request view shows a body redacted only when the webhook still holds those values, whenever the body was stored
 * (a worker may render with a configuration it cached before a change). It is `VERSION_PREFIX`, the version and a
 * colon before the rest, and it is part of the token's additional authenticated data, so a version changed in the
 * database makes the body fail to open instead of passing it off as rendered with other values. Bodies stored
 * before versions existed have none.
 */
/** In string length (UTF-16 units), which is free to read; a batch is far past it whatever its characters. */
export const COMPRESS_FROM_LENGTH = 4096;
const COMPRESSED_PREFIX = 'z:';
const VERSION_PREFIX = 's:';

/** The webhook fields that decide how its bodies are stored. */
export interface BodyOwner extends SecretsOwner {
  varNames: readonly string[];
}

/** A webhook's stored secret values that a template can print (its variables and custom headers), encrypted. */
export interface SecretsOwner {
  varsEncrypted: string | null;
  headersEncrypted: string | null;
}

/**
 * The version of a webhook's variable and header values: a digest of their stored tokens, which the API rewrites
 * only when a value changes (the same rule as `webhooks.secrets_changed_at`). Tells nothing of the values.
 */
export function secretsVersionOf(owner: SecretsOwner): string {
  return createHash('sha256').update(`${owner.varsEncrypted ?? ''}\n${owner.headersEncrypted ?? ''}`).digest('base64url').slice(0, 16);
}

function placeOf(deliveryId: string, secretsVersion: string | null): SecretPlace {
  return { column: 'deliveries.body_encrypted', row: secretsVersion === null ? deliveryId : `${deliveryId}:${secretsVersion}` };
}

/** True when a body of this webhook may be compressed before encryption: it is long, and no variable can be in it. */
export function compressesBody(webhook: BodyOwner, body: string): boolean {
  return webhook.varNames.length === 0 && body.length >= COMPRESS_FROM_LENGTH;
}

/**
 * Encrypts a delivery's body for storage, bound to the delivery and to the version of the webhook's secret values it
 * was rendered with; deflated first when {@link compressesBody}.
 */
export function sealBody(box: SecretBox, body: string, deliveryId: string, webhook: BodyOwner): string {
  const version = secretsVersionOf(webhook);
  const place = placeOf(deliveryId, version);
  // Level 1: nearly all of the saving on such repetitive text, at a fraction of the default level's CPU.
  const token = compressesBody(webhook, body) ? `${COMPRESSED_PREFIX}${box.encrypt(deflateRawSync(body, { level: 1 }), place)}` : box.encrypt(body, place);
  return `${VERSION_PREFIX}${version}:${token}`;
}

/** A stored body opened: its text, and the version of the secret values it was rendered with (null: not recorded). */
export interface OpenedBody {
  body: string;
  secretsVersion: string | null;
}

/** The body a delivery's stored value holds (made by sealBody, or by an encryption of the body alone). */
export function openStoredBody(box: SecretBox, stored: string, deliveryId: string): OpenedBody {
  let secretsVersion: string | null = null;
  let token = stored;
  if (stored.startsWith(VERSION_PREFIX)) {
    const end = stored.indexOf(':', VERSION_PREFIX.length);
    secretsVersion = stored.slice(VERSION_PREFIX.length, end);
    token = stored.slice(end + 1);
  }
  const place = placeOf(deliveryId, secretsVersion);
  const body = token.startsWith(COMPRESSED_PREFIX) ? inflateRawSync(box.decryptBytes(token.slice(COMPRESSED_PREFIX.length), place)).toString('utf8') : box.decrypt(token, place);
  return { body, secretsVersion };
}

/** The body a delivery's stored value holds. */
export function openBody(box: SecretBox, stored: string, deliveryId: string): string {
  return openStoredBody(box, stored, deliveryId).body;
}
