import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { SecretBox, SecretPlace } from '@gatehook/core/encryption';
import { COMPRESS_FROM_LENGTH } from '../tunables';

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
 */
const COMPRESSED_PREFIX = 'z:';

/** The webhook fields that decide how its bodies are stored. */
export interface BodyOwner {
  varNames: readonly string[];
}

function placeOf(deliveryId: string): SecretPlace {
  return { column: 'deliveries.body_encrypted', row: deliveryId };
}

/** True when a body of this webhook may be compressed before encryption: it is long, and no variable can be in it. */
export function compressesBody(webhook: BodyOwner, body: string): boolean {
  return webhook.varNames.length === 0 && body.length >= COMPRESS_FROM_LENGTH;
}

/** Encrypts a delivery's body for storage, bound to the delivery; deflated first when {@link compressesBody}. */
export function sealBody(box: SecretBox, body: string, deliveryId: string, webhook: BodyOwner): string {
  if (!compressesBody(webhook, body)) return box.encrypt(body, placeOf(deliveryId));
  // Level 1: nearly all of the saving on such repetitive text, at a fraction of the default level's CPU.
  return `${COMPRESSED_PREFIX}${box.encrypt(deflateRawSync(body, { level: 1 }), placeOf(deliveryId))}`;
}

/** The body a delivery's stored value holds (made by sealBody, or by an encryption of the body alone). */
export function openBody(box: SecretBox, stored: string, deliveryId: string): string {
  if (stored.startsWith(COMPRESSED_PREFIX))
    return inflateRawSync(box.decryptBytes(stored.slice(COMPRESSED_PREFIX.length), placeOf(deliveryId))).toString(
      'utf8',
    );
  return box.decrypt(stored, placeOf(deliveryId));
}
