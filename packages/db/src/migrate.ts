import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client } from 'pg';

/** Folder of Prisma's migrations, relative to this file (prisma/migrations at the repository root). */
export const MIGRATIONS_DIR = path.resolve(__dirname, '../../../prisma/migrations');

// Prisma Migrate's own advisory lock key: our runner and `prisma migrate deploy` exclude each other.
const PRISMA_MIGRATE_LOCK = 72707369;

// The bookkeeping table exactly as prisma-engines creates it, so `prisma migrate deploy/status` can take over.
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

/**
 * Thrown when an applied migration's file no longer matches what the database recorded: the database was made by
 * other migrations than these (see docs/database.md, "Upgrading").
 */
export class MigrationChangedError extends Error {
  constructor(readonly migration: string) {
    super(
      `migration ${migration} was changed after it was applied (checksum differs; see docs/database.md, "Upgrading")`,
    );
    this.name = 'MigrationChangedError';
  }
}

export interface MigrationResult {
  applied: string[];
  alreadyApplied: string[];
}

/** Creates the database named in the URL when it does not exist (connecting to the server's `postgres` db). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!name) throw new Error('DATABASE_URL names no database');
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
      } catch (error) {
        // Another runner created it between our check and our CREATE.
        if ((error as { code?: string }).code !== '42P04') throw error;
      }
    }
  } finally {
    await client.end();
  }
}

/**
 * Applies pending migrations of `dir` in name order, each in its own transaction, recording them in Prisma's
 * `_prisma_migrations` table with Prisma's checksum (SHA-256 of the file). Safe to run from several processes.
 */
export async function applyMigrations(databaseUrl: string, dir = MIGRATIONS_DIR): Promise<MigrationResult> {
  await ensureDatabase(databaseUrl);
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();

  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  const result: MigrationResult = { applied: [], alreadyApplied: [] };
  try {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK]);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const rows = await client.query<{
      migration_name: string;
      finished_at: Date | null;
      rolled_back_at: Date | null;
      checksum: string;
    }>('SELECT migration_name, finished_at, rolled_back_at, checksum FROM "_prisma_migrations"');
    const failed = rows.rows.filter((r) => r.finished_at === null && r.rolled_back_at === null);
    if (failed.length > 0) {
      throw new Error(
        `migration ${failed[0]!.migration_name} failed earlier and is not resolved; fix the database, then mark it ` +
          `rolled back (UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE migration_name = '...')`,
      );
    }
    const done = new Map(rows.rows.filter((r) => r.finished_at !== null).map((r) => [r.migration_name, r.checksum]));

    for (const name of names) {
      const sql = await readFile(path.join(dir, name, 'migration.sql'));
      const checksum = createHash('sha256').update(sql).digest('hex');
      if (done.has(name)) {
        if (done.get(name) !== checksum) {
          throw new MigrationChangedError(name);
        }
        result.alreadyApplied.push(name);
        continue;
      }
      const id = randomUUID();
      await client.query('BEGIN');
      try {
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
           VALUES ($1, $2, $3, clock_timestamp(), 0)`,
          [id, checksum, name],
        );
        await client.query(sql.toString('utf8'));
        await client.query(
          `UPDATE "_prisma_migrations" SET finished_at = clock_timestamp(), applied_steps_count = 1 WHERE id = $1`,
          [id],
        );
        await client.query('COMMIT');
        result.applied.push(name);
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(error as Error).message}`);
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK]).catch(() => undefined);
    await client.end();
  }
  return result;
}
