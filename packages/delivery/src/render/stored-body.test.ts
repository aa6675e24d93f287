import { randomBytes, randomUUID } from 'node:crypto';
import { SecretBox } from '@gatehook/core/encryption';
import { openBody, sealBody } from './stored-body';
import { COMPRESS_FROM_LENGTH } from '../tunables';

const box = new SecretBox(randomBytes(32).toString('base64'));
const noVars = { varNames: [] };
const withVars = { varNames: ['API_TOKEN'] };
const at = (deliveryId: string) => ({ column: 'deliveries.body_encrypted' as const, row: deliveryId });

describe('stored bodies', () => {
  it('stores a small body as the encryption of the body itself', () => {
    const id = randomUUID();
    const body = JSON.stringify({ type: 'audit.event', data: { id: randomUUID(), note: 'héllo ✓ \u2028' } });
    const stored = sealBody(box, body, id, noVars);
    expect(box.decrypt(stored, at(id))).toBe(body);
    expect(openBody(box, stored, id)).toBe(body);
  });

  it('compresses a batch body before encrypting it, and opens it to the same text', () => {
    const id = randomUUID();
    const line = (i: number) =>
      JSON.stringify({
        type: 'tool.call',
        timestamp: new Date(0).toISOString(),
        data: { id: randomUUID(), seq: i, who: 'ünïcode 🎉', payload: { path: '/a\\b', q: '"x"' } },
      });
    const body = Array.from({ length: 100 }, (_, i) => line(i)).join('\n');
    expect(body.length).toBeGreaterThan(COMPRESS_FROM_LENGTH);
    const stored = sealBody(box, body, id, noVars);
    expect(stored.length).toBeLessThan(body.length / 2);
    // The stored value never holds the text in the clear.
    expect(stored).not.toContain('tool.call');
    expect(openBody(box, stored, id)).toBe(body);
  });

  it('never compresses a body of a webhook that has variables: its stored length tells nothing of what they hold', () => {
    const secret = 'sk_live_0123456789abcdef';
    // An attacker's guesses in event text next to the secret: compressed, the right guess would come out shorter.
    const bodyOf = (guess: string) =>
      Array.from({ length: 60 }, (_, i) => JSON.stringify({ seq: i, token: secret, note: guess })).join('\n');
    const right = bodyOf(secret);
    const wrong = bodyOf('sk_live_zyxwvutsrqponmlk');
    expect(right.length).toBe(wrong.length);
    expect(right.length).toBeGreaterThan(COMPRESS_FROM_LENGTH);
    const storedRight = sealBody(box, right, randomUUID(), withVars);
    const storedWrong = sealBody(box, wrong, randomUUID(), withVars);
    expect(storedRight.startsWith('z:')).toBe(false);
    expect(storedRight.length).toBe(storedWrong.length);
    // Without variables the same bodies would be compressed, and their lengths would differ.
    expect(sealBody(box, right, randomUUID(), noVars).length).not.toBe(
      sealBody(box, wrong, randomUUID(), noVars).length,
    );
    const id = randomUUID();
    expect(openBody(box, sealBody(box, right, id, withVars), id)).toBe(right);
  });

  it('opens both forms: compressed, and bodies stored before compression existed, whatever their size', () => {
    const id = randomUUID();
    const body = 'x'.repeat(COMPRESS_FROM_LENGTH * 3);
    expect(openBody(box, box.encrypt(body, at(id)), id)).toBe(body);
    expect(openBody(box, sealBody(box, body, id, noVars), id)).toBe(body);
    expect(openBody(box, sealBody(box, body, id, withVars), id)).toBe(body);
  });

  it("binds a body to its delivery: moved to another delivery's row it does not open", () => {
    const id = randomUUID();
    for (const body of ['small', 'y'.repeat(COMPRESS_FROM_LENGTH * 2)]) {
      const stored = sealBody(box, body, id, noVars);
      expect(() => openBody(box, stored, randomUUID())).toThrow();
    }
  });

  it('refuses a compressed body whose ciphertext was tampered with', () => {
    const id = randomUUID();
    const stored = sealBody(box, 'y'.repeat(COMPRESS_FROM_LENGTH * 2), id, noVars);
    const tampered = `${stored.slice(0, -4)}${stored.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    expect(() => openBody(box, tampered, id)).toThrow();
  });
});
