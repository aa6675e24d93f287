import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { SecretBox } from '@gatehook/core/encryption';

/**
 * A delivery's body as stored (deliveries.body_encrypted): encrypted always, and compressed first when it is large.
 * A batch body (ndjson or a JSON array of up to max_events rendered events) repeats the same keys and values line
 * after line: deflated it is a tenth of its size, so the fan-out statement carries, and Postgres parses, toasts and
 * writes to its WAL, a tenth of the bytes. Small bodies (a single event) are stored as before: compression would
 * save little, and the cost would be paid on every delivery.
 *
 * A compressed body is `COMPRESSED_PREFIX` followed by the encryption token of the deflated bytes; anything else is
 * the token of the body itself, so every body stored before compression existed still opens. Compressing before
 * encrypting reveals nothing a reader of the database could use: the length of a stored body is all it changes,
 * and nobody who can read the table can also choose what a batch contains and watch its length change.
 */
/** In string length (UTF-16 units), which is free to read; a batch is far past it whatever its characters. */
export const COMPRESS_FROM_LENGTH = 4096;
const COMPRESSED_PREFIX = 'z:';

/** Encrypts a body for storage, deflating it first when it is at least COMPRESS_FROM_LENGTH long. */
export function sealBody(box: SecretBox, body: string): string {
  if (body.length < COMPRESS_FROM_LENGTH) return box.encrypt(body);
  // Level 1: nearly all of the saving on such repetitive text, at a fraction of the default level's CPU.
  return `${COMPRESSED_PREFIX}${box.encrypt(deflateRawSync(body, { level: 1 }))}`;
}

/** The body a stored value holds (made by sealBody, or by an encryption of the body alone). */
export function openBody(box: SecretBox, stored: string): string {
  if (stored.startsWith(COMPRESSED_PREFIX)) return inflateRawSync(box.decryptBytes(stored.slice(COMPRESSED_PREFIX.length))).toString('utf8');
  return box.decrypt(stored);
}
