import { defineConfig } from 'prisma/config';

// The CLI is used for `generate` only (see docs/database.md): migrations are applied by packages/db/src/migrate.ts.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/gatehook' },
});
