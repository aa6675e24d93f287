import { randomBytes, randomUUID } from 'node:crypto';
import { SecretBox } from '@gatehook/core/encryption';
import { REDACTION_WITHHELD } from './render/redaction';
import { secretsVersionOf } from './render/secrets-version';
import { sealBody } from './render/stored-body';
import { RequestViews, secretsValidAt, type WebhookSecrets } from './request-view';
import { WEBHOOK_CONFIG_TTL_MS } from './tunables';

describe('secretsValidAt', () => {
  const overlap = 86_400;
  const rotatedAt = new Date('2030-01-02T00:00:00Z');
  const secrets = {
    current: 'new',
    previous: 'old',
    previousValidUntil: new Date(rotatedAt.getTime() + overlap * 1000),
  };

  it('is the current secret alone when none was rotated', () => {
    expect(secretsValidAt({ current: 'only', previous: null, previousValidUntil: null }, new Date(), overlap)).toEqual([
      'only',
    ]);
  });
  it('is the secret replaced later for an attempt made before the rotation', () => {
    expect(secretsValidAt(secrets, new Date(rotatedAt.getTime() - 1), overlap)).toEqual(['old']);
  });
  it('is both, newest first, during the overlap', () => {
    expect(secretsValidAt(secrets, rotatedAt, overlap)).toEqual(['new', 'old']);
  });
  it('is the current one alone once the overlap ended', () => {
    expect(secretsValidAt(secrets, secrets.previousValidUntil, overlap)).toEqual(['new']);
  });
});

describe('RequestViews', () => {
  const box = new SecretBox(randomBytes(32).toString('base64'));
  const webhookWith = (
    token: string,
    secretsChangedAt: Date | null = null,
  ): WebhookSecrets & { varNames: string[] } => {
    const id = randomUUID();
    return {
      id,
      varNames: ['TOKEN'],
      secretEncrypted: box.encrypt('whsec_c2VjcmV0', { column: 'webhooks.secret_encrypted', row: id }),
      previousSecretEncrypted: null,
      previousSecretValidUntil: null,
      varsEncrypted: box.encryptMap({ TOKEN: token }, { column: 'webhooks.vars_encrypted', row: id }),
      headersEncrypted: null,
      secretsChangedAt,
    };
  };
  const sent = (bodyEncrypted: string, id: string, secretsVersion: string | null, createdAt = new Date()) => ({
    id,
    createdAt,
    bodyEncrypted,
    contentType: 'application/json',
    secretsVersion,
    attemptAt: createdAt,
  });

  it('redacts a body rendered with the values the webhook holds, and withholds one rendered with others, whenever stored', () => {
    const views = new RequestViews(box);
    const before = webhookWith('old-value');
    const id = randomUUID();
    const stored = sealBody(box, '{"t":"old-value"}', id, before);
    expect(views.view(before, sent(stored, id, secretsVersionOf(before)), 60).body).toBe('{"t":"[redacted]"}');
    // The value changed long before the body was stored: still rendered with the old one.
    const changed = {
      ...before,
      varsEncrypted: box.encryptMap({ TOKEN: 'new-value' }, { column: 'webhooks.vars_encrypted', row: before.id }),
      secretsChangedAt: new Date(Date.now() - 3_600_000),
    };
    expect(views.view(changed, sent(stored, id, secretsVersionOf(before)), 60).body).toBe('[redacted]');
    expect(secretsVersionOf(changed)).not.toBe(secretsVersionOf(before));
    expect(secretsVersionOf({ ...before })).toBe(secretsVersionOf(before));
  });

  it('decides a delivery without a recorded version by when it was created', () => {
    const views = new RequestViews(box);
    const changedAt = new Date(Date.now() - 3_600_000);
    const webhook = webhookWith('a-value', changedAt);
    const id = randomUUID();
    const legacy = sealBody(box, '{"t":"a-value"}', id, webhook);
    expect(
      views.view(webhook, sent(legacy, id, null, new Date(changedAt.getTime() + WEBHOOK_CONFIG_TTL_MS)), 60).body,
    ).toBe('[redacted]');
    expect(
      views.view(webhook, sent(legacy, id, null, new Date(changedAt.getTime() + WEBHOOK_CONFIG_TTL_MS + 1)), 60).body,
    ).toBe('{"t":"[redacted]"}');
  });

  it('withholds the body with its marker when redaction runs past its budget', () => {
    const webhook = webhookWith('v');
    const id = randomUUID();
    // Escapes of every kind, so the search goes through several decodings, each a look at the (spent) budget.
    const stored = sealBody(box, JSON.stringify({ t: 'v &amp; %41\n'.repeat(30_000) }), id, webhook);
    expect(new RequestViews(box, 0).view(webhook, sent(stored, id, secretsVersionOf(webhook)), 60).body).toBe(
      REDACTION_WITHHELD,
    );
  });
});
