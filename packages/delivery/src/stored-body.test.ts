import { randomBytes, randomUUID } from 'node:crypto';
import { SecretBox } from '@gatehook/core/encryption';
import { COMPRESS_FROM_LENGTH, openBody, sealBody } from './stored-body';

const box = new SecretBox(randomBytes(32).toString('base64'));

describe('stored bodies', () => {
  it('stores a small body as the encryption of the body itself', () => {
    const body = JSON.stringify({ type: 'audit.event', data: { id: randomUUID(), note: 'héllo ✓ \u2028' } });
    const stored = sealBody(box, body);
    expect(box.decrypt(stored)).toBe(body);
    expect(openBody(box, stored)).toBe(body);
  });

  it('compresses a batch body before encrypting it, and opens it to the same text', () => {
    const line = (i: number) => JSON.stringify({ type: 'tool.call', timestamp: new Date(0).toISOString(), data: { id: randomUUID(), seq: i, who: 'ünïcode 🎉', payload: { path: '/a\\b', q: '"x"' } } });
    const body = Array.from({ length: 100 }, (_, i) => line(i)).join('\n');
    expect(body.length).toBeGreaterThan(COMPRESS_FROM_LENGTH);
    const stored = sealBody(box, body);
    expect(stored.length).toBeLessThan(body.length / 2);
    // The stored value never holds the text in the clear.
    expect(stored).not.toContain('tool.call');
    expect(openBody(box, stored)).toBe(body);
  });

  it('opens bodies stored before compression existed, whatever their size', () => {
    const body = 'x'.repeat(COMPRESS_FROM_LENGTH * 3);
    expect(openBody(box, box.encrypt(body))).toBe(body);
  });

  it('refuses a compressed body whose ciphertext was tampered with', () => {
    const stored = sealBody(box, 'y'.repeat(COMPRESS_FROM_LENGTH * 2));
    const tampered = `${stored.slice(0, -4)}${stored.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    expect(() => openBody(box, tampered)).toThrow();
  });
});
