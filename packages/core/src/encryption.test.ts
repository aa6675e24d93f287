import { AUTH_TAG_BYTES, SecretBox, generateEncryptionKey, type SecretPlace } from '@gatehook/core/encryption';

const place: SecretPlace = { column: 'webhooks.url_encrypted', row: '00000000-0000-4000-8000-000000000001' };

describe('SecretBox', () => {
  const k1 = generateEncryptionKey();
  const k2 = generateEncryptionKey();

  it('round-trips strings and maps without the clear text in the token', () => {
    const box = new SecretBox(k1);
    const token = box.encrypt('https://example.com/hook?token=plantedsecret', place);
    expect(token).not.toContain('plantedsecret');
    expect(box.decrypt(token, place)).toBe('https://example.com/hook?token=plantedsecret');
    expect(box.decryptMap(box.encryptMap({ API_KEY: 'v1' }, place), place)).toEqual({ API_KEY: 'v1' });
  });

  it('uses a fresh IV for every encryption', () => {
    const box = new SecretBox(k1);
    expect(box.encrypt('same', place)).not.toBe(box.encrypt('same', place));
  });

  it('decrypts with an older key after rotation and encrypts with the first', () => {
    const old = new SecretBox(k1);
    const rotated = new SecretBox(`${k2},${k1}`);
    const token = old.encrypt('value', place);
    expect(rotated.decrypt(token, place)).toBe('value');
    expect(() => old.decrypt(rotated.encrypt('value', place), place)).toThrow(/no configured encryption key/);
  });

  it('rejects tampered ciphertext', () => {
    const box = new SecretBox(k1);
    const token = box.encrypt('value', place);
    const last = token.at(-2) === 'A' ? 'B' : 'A';
    expect(() => box.decrypt(token.slice(0, -2) + last + token.slice(-1), place)).toThrow();
  });

  it('refuses a truncated authentication tag (AUTH_TAG_BYTES = 16, no shorter tag accepted)', () => {
    expect(AUTH_TAG_BYTES).toBe(16);
    const box = new SecretBox(k1);
    const [format, keyId, payload] = box.encrypt('', place).split('.');
    const sealed = Buffer.from(payload!, 'base64url');
    expect(sealed).toHaveLength(12 + AUTH_TAG_BYTES);
    // Every cut of the tag, down to GCM's 4-byte minimum and below, is refused.
    for (let cut = 1; cut <= sealed.length; cut++) {
      const token = `${format}.${keyId}.${sealed.subarray(0, sealed.length - cut).toString('base64url')}`;
      expect(() => box.decrypt(token, place)).toThrow();
    }
    const fourByteTag = `${format}.${keyId}.${sealed.subarray(0, 16).toString('base64url')}`;
    expect(() => box.decrypt(fourByteTag, place)).toThrow(/truncated/);
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => new SecretBox(Buffer.alloc(16).toString('base64'))).toThrow(/32 bytes/);
    expect(() => new SecretBox(' , ')).toThrow(/at least one/);
  });

  it('binds a token to its column and row: it opens there and nowhere else', () => {
    const box = new SecretBox(k1);
    const token = box.encrypt('https://receiver.example/hook', place);
    expect(token.startsWith('gh2.')).toBe(true);
    expect(box.decrypt(token, { ...place })).toBe('https://receiver.example/hook');
    // Moved to another webhook's row, or to another column of the same row: refused.
    expect(() => box.decrypt(token, { ...place, row: '00000000-0000-4000-8000-000000000002' })).toThrow();
    expect(() => box.decrypt(token, { ...place, column: 'webhooks.secret_encrypted' })).toThrow();
    expect(() =>
      box.decryptMap(box.encryptMap({ A: '1' }, place), { column: 'webhooks.vars_encrypted', row: place.row }),
    ).toThrow();
    // Relabelled under another format to shed its binding: refused.
    expect(() => box.decrypt(token.replace(/^gh2\./, 'gh1.'), { ...place, row: 'another' })).toThrow();
  });
});
