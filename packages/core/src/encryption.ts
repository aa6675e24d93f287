import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** Tokens bound to their column and row (additional authenticated data); every token encrypt() makes. */
const FORMAT = 'gh2';

/** Every column that holds a token of this box, named `table.column`. */
export type SecretColumn =
  | 'webhooks.url_encrypted'
  | 'webhooks.vars_encrypted'
  | 'webhooks.headers_encrypted'
  | 'webhooks.secret_encrypted'
  | 'webhooks.previous_secret_encrypted'
  | 'webhooks.client_certificate_encrypted'
  | 'webhooks.auth_secret_encrypted'
  | 'deliveries.body_encrypted';

/**
 * Where a token is stored: its column and the id of its row. It is bound into the token as GCM's additional
 * authenticated data, so a token copied to another row or column (by anyone who can write the database but holds
 * no key) does not decrypt there.
 */
export interface SecretPlace {
  column: SecretColumn;
  row: string;
}

function additionalData(place: SecretPlace): Buffer {
  return Buffer.from(`${place.column}:${place.row}`, 'utf8');
}

/** GCM nonce length. */
const IV_BYTES = 12;

/** GCM tag length: every token carries the full 16-byte tag, and decryption accepts no shorter one. */
export const AUTH_TAG_BYTES = 16;

interface Key {
  id: string;
  bytes: Buffer;
}

/**
 * AES-256-GCM for every secret at rest (URL, header values, var values, signing secrets, stored bodies).
 * The first key encrypts; every key decrypts, so keys rotate by prepending a new one. Each ciphertext names
 * its key by a short fingerprint, so decryption never has to try keys in turn. Each token is bound to its place
 * ({@link SecretPlace}) as additional authenticated data: a token opens only in the column and row it was made
 * for. Binding costs no key derivation: the additional data is a few bytes fed to GCM.
 */
export class SecretBox {
  private readonly keys: Key[];

  constructor(keyList: string) {
    const entries = keyList
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k.length > 0);
    if (entries.length === 0) throw new Error('at least one encryption key is required');
    this.keys = entries.map((entry, index) => {
      const bytes = Buffer.from(entry, 'base64');
      if (bytes.length !== 32) {
        throw new Error(`encryption key ${index + 1} must be 32 bytes encoded as base64 (got ${bytes.length} bytes)`);
      }
      return { id: createHash('sha256').update(bytes).digest('hex').slice(0, 8), bytes };
    });
  }

  /** Encrypts a UTF-8 string or bytes into a self-describing text token, bound to the place it is stored. */
  encrypt(plain: string | Buffer, place: SecretPlace): string {
    const key = this.keys[0]!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.bytes, iv, { authTagLength: AUTH_TAG_BYTES });
    cipher.setAAD(additionalData(place));
    const data = Buffer.concat([cipher.update(plain), cipher.final()]);
    const sealed = Buffer.concat([iv, data, cipher.getAuthTag()]);
    return `${FORMAT}.${key.id}.${sealed.toString('base64url')}`;
  }

  /** Decrypts a token made by encrypt() for the same place into bytes. */
  decryptBytes(token: string, place: SecretPlace): Buffer {
    const [format, keyId, payload] = token.split('.');
    if (format !== FORMAT || !keyId || payload === undefined) throw new Error('not an encrypted value');
    const key = this.keys.find((k) => k.id === keyId);
    if (!key) throw new Error(`no configured encryption key matches key id ${keyId}`);
    const sealed = Buffer.from(payload, 'base64url');
    // GCM would accept a tag cut to as little as 4 bytes, which a forger can guess; ours are always 16.
    if (sealed.length < IV_BYTES + AUTH_TAG_BYTES) throw new Error('encrypted value is truncated');
    const iv = sealed.subarray(0, IV_BYTES);
    const tag = sealed.subarray(sealed.length - AUTH_TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, iv, { authTagLength: AUTH_TAG_BYTES });
    decipher.setAuthTag(tag);
    decipher.setAAD(additionalData(place));
    return Buffer.concat([
      decipher.update(sealed.subarray(IV_BYTES, sealed.length - AUTH_TAG_BYTES)),
      decipher.final(),
    ]);
  }

  /** Decrypts a token made by encrypt() for the same place into a UTF-8 string. */
  decrypt(token: string, place: SecretPlace): string {
    return this.decryptBytes(token, place).toString('utf8');
  }

  /** Encrypts a map of names to values as one token, bound to the place it is stored. */
  encryptMap(values: Record<string, string>, place: SecretPlace): string {
    return this.encrypt(JSON.stringify(values), place);
  }

  /** Decrypts a token made by encryptMap() for the same place. */
  decryptMap(token: string, place: SecretPlace): Record<string, string> {
    const parsed: unknown = JSON.parse(this.decrypt(token, place));
    const out: Record<string, string> = {};
    if (parsed && typeof parsed === 'object') {
      for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') out[k] = v;
    }
    return out;
  }
}

/** A fresh random 32-byte key in the form GATEHOOK_ENCRYPTION_KEY expects. */
export function generateEncryptionKey(): string {
  return randomBytes(32).toString('base64');
}
