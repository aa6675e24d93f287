import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { applyMigrations } from '@gatehook/db/migrate';
import { TEST_PG_SERVER } from './env';
import { waitFor } from './until';

/** How long a drop lets the database's own connections close before it terminates those left. */
const CLOSE_WAIT_MS = 2_000;

/**
 * Drops the database a URL names, closing its connections (through the server's `postgres` database). A pool's
 * `end()` resolves before its sockets have closed; a connection terminated while it closes emits its FATAL as an
 * unhandled error in the test's process, so the drop first waits (up to CLOSE_WAIT_MS) for the connections to go,
 * and only then terminates any still there.
 */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    const gone = async () =>
      (await admin.query('SELECT 1 FROM pg_stat_activity WHERE datname = $1 LIMIT 1', [name])).rowCount === 0;
    // Past the wait, whatever is still connected is terminated by the drop itself.
    await waitFor(gone, { timeoutMs: CLOSE_WAIT_MS, everyMs: 25 }).catch(() => undefined);
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
