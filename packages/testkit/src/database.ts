import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { applyMigrations } from '@gatehook/db/migrate';
import { TEST_PG_SERVER } from './env';

/**
 * A freshly migrated database of its own, for tests that run a worker: a worker's reconciler scans its whole
 * database, so it must not see the events of tests running beside it.
 */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `gatehook_t_${randomBytes(6).toString('hex')}`;
  const url = `${TEST_PG_SERVER}/${name}`;
  await applyMigrations(url);
  return {
    url,
    async drop() {
      const admin = new Client({ connectionString: `${TEST_PG_SERVER}/postgres` });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
