import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const FORMAT = 'gh1';

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
 * its key by a short fingerprint, so decryption never has to try keys in turn.
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

  /** Encrypts a UTF-8 string or bytes into a self-describing text token. */
  encrypt(plain: string | Buffer): string {
    const key = this.keys[0]!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.bytes, iv, { authTagLength: AUTH_TAG_BYTES });
    const data = Buffer.concat([cipher.update(plain), cipher.final()]);
    const sealed = Buffer.concat([iv, data, cipher.getAuthTag()]);
    return `${FORMAT}.${key.id}.${sealed.toString('base64url')}`;
  }

  /** Decrypts a token made by encrypt() into bytes. */
  decryptBytes(token: string): Buffer {
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
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - AUTH_TAG_BYTES)), decipher.final()]);
  }

  /** Decrypts a token made by encrypt() into a UTF-8 string. */
  decrypt(token: string): string {
    return this.decryptBytes(token).toString('utf8');
  }

  /** Encrypts a map of names to values as one token. */
  encryptMap(values: Record<string, string>): string {
    return this.encrypt(JSON.stringify(values));
  }

  /** Decrypts a token made by encryptMap(). */
  decryptMap(token: string): Record<string, string> {
    const parsed: unknown = JSON.parse(this.decrypt(token));
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
