import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { applyMigrations } from '@gatehook/db/migrate';
import { TEST_PG_SERVER } from './env';

/** Drops the database a URL names, closing its connections (through the server's `postgres` database). */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name.replaceAll('"', '""')}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/**
 * A freshly migrated database of its own, for tests that run a worker: a worker's reconciler scans its whole
 * database, so it must not see the events of tests running beside it.
 */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `gatehook_t_${randomBytes(6).toString('hex')}`;
  const url = `${TEST_PG_SERVER}/${name}`;
  await applyMigrations(url);
  return { url, drop: () => dropDatabase(url) };
}
