import { applyMigrations } from '@gatehook/db/migrate';
import { TEST_DATABASE_URL } from './env';

/** Jest global setup: the shared test database is migrated once; every test then works in its own organisation. */
export default async function globalSetup(): Promise<void> {
  await applyMigrations(TEST_DATABASE_URL);
}
