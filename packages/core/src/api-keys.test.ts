import { generateApiKey, hashApiKey, hasPermission, looksLikeApiKey, parsePermissions } from '@gatehook/core/api-keys';

describe('API keys', () => {
  it('have the contract format and are hashed with SHA-256', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^ghk_[A-Za-z0-9_-]{43}$/);
    expect(looksLikeApiKey(key)).toBe(true);
    expect(looksLikeApiKey(`${key}x`)).toBe(false);
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(generateApiKey()).not.toBe(key);
  });

  it('give admins every permission and members only theirs', () => {
    const base = { keyId: 'k', keyName: 'n', orgId: 'o' };
    expect(hasPermission({ ...base, role: 'admin', permissions: [] }, 'manage_webhooks')).toBe(true);
    expect(hasPermission({ ...base, role: 'member', permissions: ['ingest_events'] }, 'manage_webhooks')).toBe(false);
    expect(hasPermission({ ...base, role: 'member', permissions: ['manage_webhooks'] }, 'manage_webhooks')).toBe(true);
  });

  it('parse permission lists strictly', () => {
    expect(parsePermissions('manage_webhooks, ingest_events,manage_webhooks')).toEqual([
      'manage_webhooks',
      'ingest_events',
    ]);
    expect(() => parsePermissions('manage_everything')).toThrow(/unknown permission/);
  });
});
