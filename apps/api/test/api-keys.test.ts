import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { announceApiKeyChange } from '@gatehook/api/http/api-keys';
import { revokeApiKey } from '@gatehook/db/api-keys';
import { createDb, sqlPool } from '@gatehook/db/client';
import { createTestOrg } from '@gatehook/testkit/api';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '@gatehook/testkit/env';
import { startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';

// API keys are verified from a cache in each process; a revocation is announced through Redis and must stop the
// key on every process within a second.

jest.setTimeout(90_000);

const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
const redis = new Redis(TEST_REDIS_URL);
const prefix = `test_${randomBytes(6).toString('hex')}`;
let processes: ServiceProcess[] = [];

beforeAll(async () => {
  const env = {
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    NODE_ENV: 'test',
    API_RATE_LIMIT_PER_SECOND: '0',
  };
  processes = await Promise.all([startServiceProcess('api', env), startServiceProcess('api', env)]);
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill('SIGTERM')));
  await db.$disconnect();
  redis.disconnect();
});

const status = async (p: ServiceProcess, key: string) =>
  (await fetch(`http://127.0.0.1:${p.port}/event-types`, { headers: { authorization: `Bearer ${key}` } })).status;

describe('API key cache across two API processes', () => {
  it('a revoked key is refused by both processes within one second of the announcement', async () => {
    const org = await createTestOrg(db);
    const other = await createTestOrg(db);
    // Both processes now hold both keys in their caches.
    for (const p of processes) {
      expect(await status(p, org.admin)).toBe(200);
      expect(await status(p, other.admin)).toBe(200);
    }
    const [row] = await db.apiKey.findMany({ where: { orgId: org.orgId, role: 'admin' } });
    const revoked = await revokeApiKey(sqlPool(db), row!.id);
    const announced = Date.now();
    await announceApiKeyChange(redis, prefix, [revoked!.keyHash]);

    const refusedAfter = await Promise.all(
      processes.map(async (p) => {
        for (;;) {
          const code = await status(p, org.admin);
          if (code === 401) return Date.now() - announced;
          expect(code).toBe(200);
          if (Date.now() - announced > 5_000) return Infinity;
        }
      }),
    );
    for (const ms of refusedAfter) expect(ms).toBeLessThan(1000);
    // Only that key: the other organisation's cached key keeps working.
    for (const p of processes) expect(await status(p, other.admin)).toBe(200);
  });

  it('a key is not checked against Postgres on every request once verified', async () => {
    const org = await createTestOrg(db);
    expect(await status(processes[0]!, org.admin)).toBe(200);
    // Revoked in Postgres without an announcement: the cached principal still answers (until the TTL backstop),
    // which shows the cache is what serves the request.
    const [row] = await db.apiKey.findMany({ where: { orgId: org.orgId, role: 'admin' } });
    await revokeApiKey(sqlPool(db), row!.id);
    expect(await status(processes[0]!, org.admin)).toBe(200);
    // A process that never saw the key asks Postgres and refuses it.
    expect(await status(processes[1]!, org.admin)).toBe(401);
  });
});
