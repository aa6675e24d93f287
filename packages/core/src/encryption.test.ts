import { AUTH_TAG_BYTES, SecretBox, generateEncryptionKey } from '@gatehook/core/encryption';

describe('SecretBox', () => {
  const k1 = generateEncryptionKey();
  const k2 = generateEncryptionKey();

  it('round-trips strings and maps without the clear text in the token', () => {
    const box = new SecretBox(k1);
    const token = box.encrypt('https://example.com/hook?token=plantedsecret');
    expect(token).not.toContain('plantedsecret');
    expect(box.decrypt(token)).toBe('https://example.com/hook?token=plantedsecret');
    expect(box.decryptMap(box.encryptMap({ API_KEY: 'v1' }))).toEqual({ API_KEY: 'v1' });
  });

  it('uses a fresh IV for every encryption', () => {
    const box = new SecretBox(k1);
    expect(box.encrypt('same')).not.toBe(box.encrypt('same'));
  });

  it('decrypts with an older key after rotation and encrypts with the first', () => {
    const old = new SecretBox(k1);
    const rotated = new SecretBox(`${k2},${k1}`);
    const token = old.encrypt('value');
    expect(rotated.decrypt(token)).toBe('value');
    expect(() => old.decrypt(rotated.encrypt('value'))).toThrow(/no configured encryption key/);
  });

  it('rejects tampered ciphertext', () => {
    const box = new SecretBox(k1);
    const token = box.encrypt('value');
    const last = token.at(-2) === 'A' ? 'B' : 'A';
    expect(() => box.decrypt(token.slice(0, -2) + last + token.slice(-1))).toThrow();
  });

  it('refuses a truncated authentication tag (AUTH_TAG_BYTES = 16, no shorter tag accepted)', () => {
    expect(AUTH_TAG_BYTES).toBe(16);
    const box = new SecretBox(k1);
    const [format, keyId, payload] = box.encrypt('').split('.');
    const sealed = Buffer.from(payload!, 'base64url');
    expect(sealed).toHaveLength(12 + AUTH_TAG_BYTES);
    // Every cut of the tag, down to GCM's 4-byte minimum and below, is refused.
    for (let cut = 1; cut <= sealed.length; cut++) {
      const token = `${format}.${keyId}.${sealed.subarray(0, sealed.length - cut).toString('base64url')}`;
      expect(() => box.decrypt(token)).toThrow();
    }
    const fourByteTag = `${format}.${keyId}.${sealed.subarray(0, 16).toString('base64url')}`;
    expect(() => box.decrypt(fourByteTag)).toThrow(/truncated/);
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => new SecretBox(Buffer.alloc(16).toString('base64'))).toThrow(/32 bytes/);
    expect(() => new SecretBox(' , ')).toThrow(/at least one/);
  });
});
