import { applyMigrations, MigrationChangedError } from '@gatehook/db/migrate';
import { dropDatabase } from './database';
import { TEST_DATABASE_URL } from './env';

/**
 * Jest global setup: the shared test database is migrated once; every test then works in its own organisation. A test
 * database made by other migrations than prisma/migrations' (a checkout of another branch, an earlier pre-release
 * build) holds nothing but earlier test runs: it is dropped and made again rather than failing every suite.
 */
export default async function globalSetup(): Promise<void> {
  try {
    await applyMigrations(TEST_DATABASE_URL);
  } catch (error) {
    if (!(error instanceof MigrationChangedError)) throw error;
    await dropDatabase(TEST_DATABASE_URL);
    await applyMigrations(TEST_DATABASE_URL);
  }
}
