import { randomBytes } from 'node:crypto';
import { ApiKeyCache } from '@gatehook/api/http/api-keys';
import { parseConfig } from '@gatehook/core/config';
import { createDb } from '@gatehook/db/client';
import { createTestOrg } from '@gatehook/testkit/api';
import { TEST_DATABASE_URL } from '@gatehook/testkit/env';

// CONTRACT 15: unknown API keys never evict known ones from the key cache. Real Postgres behind the cache; a key
// served from the cache is answered synchronously (principalOf returns no promise), a lookup returns a promise.

const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
afterAll(() => db.$disconnect());

const randomKey = () => `ghk_${randomBytes(32).toString('base64url')}`;

describe('API key cache', () => {
  it('a flood of unknown keys leaves every verified key cached', async () => {
    const defaults = parseConfig({ NODE_ENV: 'test' });
    expect(defaults.API_KEY_MISS_CACHE_MAX).toBeLessThan(defaults.API_KEY_CACHE_MAX);
    const org = await createTestOrg(db);
    const other = await createTestOrg(db);
    const known = [org.admin, org.member, other.admin];
    // Room for exactly the known keys, and a small miss cache, so that the flood is many times either.
    const cache = new ApiKeyCache(db, { max: known.length, missMax: 8, ttlMs: 60_000 });
    for (const key of known) expect(await cache.principalOf(key)).not.toBeNull();
    for (const key of known) expect(cache.principalOf(key)).not.toBeInstanceOf(Promise);

    const flood = Array.from({ length: 200 }, randomKey);
    for (let i = 0; i < flood.length; i += 20)
      await Promise.all(flood.slice(i, i + 20).map((key) => cache.principalOf(key)));

    for (const key of known) {
      const principal = cache.principalOf(key);
      expect(principal).not.toBeInstanceOf(Promise);
      expect(principal).not.toBeNull();
    }
    // Unknown keys are still remembered (the latest ones): a repeated bad key costs no query either.
    const last = flood.at(-1)!;
    expect(cache.principalOf(last)).toBeNull();
  });
});
