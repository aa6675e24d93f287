import { randomBytes } from 'node:crypto';
import { appendFile, cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { getDMMF } from '@prisma/internals';
import { Client } from 'pg';
import { applyMigrations, MigrationChangedError, MIGRATIONS_DIR } from '@gatehook/db/migrate';
import { dropDatabase } from '@gatehook/testkit/database';

const SERVER = process.env.TEST_PG_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
const dbName = `gatehook_migrate_${randomBytes(4).toString('hex')}`;
const databaseUrl = `${SERVER}/${dbName}`;

// Prisma scalar → the udt_name Postgres reports for the column (native type wins when given).
function expectedType(field: { type: string; nativeType?: unknown; kind: string }, enums: Set<string>): string {
  const native = Array.isArray(field.nativeType) ? String(field.nativeType[0]) : undefined;
  if (native === 'Uuid') return 'uuid';
  if (field.kind === 'enum' || enums.has(field.type)) return field.type;
  switch (field.type) {
    case 'String':
      return 'text';
    case 'Int':
      return 'int4';
    case 'BigInt':
      return 'int8';
    case 'Boolean':
      return 'bool';
    case 'DateTime':
      return native === 'Timestamptz' ? 'timestamptz' : 'timestamp';
    case 'Json':
      return 'jsonb';
    default:
      throw new Error(`type ${field.type} not mapped in this test`);
  }
}

async function query<T extends Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

afterAll(() => dropDatabase(databaseUrl));

describe('applyMigrations', () => {
  it('creates the database, applies every migration once, and records them as Prisma does', async () => {
    const first = await applyMigrations(databaseUrl);
    expect(first.applied.length).toBeGreaterThan(0);
    const second = await applyMigrations(databaseUrl);
    expect(second.applied).toEqual([]);
    expect(second.alreadyApplied).toEqual(first.applied);

    const rows = await query<{ migration_name: string; checksum: string; applied_steps_count: number }>(
      'SELECT migration_name, checksum, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name',
    );
    expect(rows.map((r) => r.migration_name)).toEqual(first.applied);
    for (const row of rows) expect(row.applied_steps_count).toBe(1);
  });

  it('is safe when several runners start at once', async () => {
    const results = await Promise.all([1, 2, 3, 4].map(() => applyMigrations(databaseUrl)));
    for (const r of results) expect(r.applied).toEqual([]);
  });

  it('refuses a database made by other migrations: an applied migration whose file differs', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gatehook-migrations-'));
    try {
      await cp(MIGRATIONS_DIR, dir, { recursive: true });
      const first = (await readdir(dir)).filter((n) => !n.endsWith('.toml')).sort()[0]!;
      await appendFile(path.join(dir, first, 'migration.sql'), '\n-- edited\n');
      await expect(applyMigrations(databaseUrl, dir)).rejects.toEqual(new MigrationChangedError(first));
      await expect(applyMigrations(databaseUrl, dir)).rejects.toBeInstanceOf(MigrationChangedError);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('produces exactly the tables, columns, enums and indexes that prisma/schema.prisma describes', async () => {
    const schema = await readFile(path.join(MIGRATIONS_DIR, '..', 'schema.prisma'), 'utf8');
    const { datamodel } = await getDMMF({ datamodel: schema });
    const enumNames = new Set(datamodel.enums.map((e) => e.dbName ?? e.name));

    const columns = await query<{
      table_name: string;
      column_name: string;
      udt_name: string;
      is_nullable: string;
      data_type: string;
    }>(
      `SELECT table_name, column_name, udt_name, is_nullable, data_type FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'
         -- Partitions are the history tables' storage, not tables of their own (docs/database.md).
         AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.relname = table_name AND c.relispartition)`,
    );
    const tables = new Set(columns.map((c) => c.table_name));
    expect([...tables].sort()).toEqual(datamodel.models.map((m) => m.dbName ?? m.name).sort());

    for (const model of datamodel.models) {
      const table = model.dbName ?? model.name;
      const scalars = model.fields.filter((f) => f.kind === 'scalar' || f.kind === 'enum');
      const actual = columns.filter((c) => c.table_name === table);
      expect(actual.map((c) => c.column_name).sort()).toEqual(scalars.map((f) => f.dbName ?? f.name).sort());
      for (const field of scalars) {
        const column = actual.find((c) => c.column_name === (field.dbName ?? field.name))!;
        const type = expectedType(field as never, enumNames);
        expect(`${table}.${column.column_name}:${column.udt_name}`).toBe(
          `${table}.${column.column_name}:${field.isList ? `_${type}` : type}`,
        );
        // Prisma leaves list columns nullable; scalars follow `?`.
        if (!field.isList) {
          expect(`${table}.${column.column_name}:${column.is_nullable}`).toBe(
            `${table}.${column.column_name}:${field.isRequired ? 'NO' : 'YES'}`,
          );
        }
      }
    }

    const enums = await query<{ typname: string; labels: string[] }>(
      `SELECT t.typname, array_agg(e.enumlabel ORDER BY e.enumsortorder)::text[] AS labels
       FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid GROUP BY t.typname`,
    );
    expect(Object.fromEntries(enums.map((e) => [e.typname, e.labels]))).toEqual(
      Object.fromEntries(datamodel.enums.map((e) => [e.dbName ?? e.name, e.values.map((v) => v.dbName ?? v.name)])),
    );

    // Every @@index / @@unique / @unique / @@id of the schema exists with its columns in order.
    const indexes = await query<{ table: string; columns: string[]; unique: boolean }>(
      `SELECT t.relname AS table, i.indisunique AS unique,
              array(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n)
                    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
       FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace ns ON ns.oid = t.relnamespace
       WHERE ns.nspname = 'public' AND t.relname <> '_prisma_migrations' AND NOT t.relispartition`,
    );
    const have = new Set(indexes.map((i) => `${i.table}(${i.columns.join(',')})${i.unique ? ' unique' : ''}`));
    const want = datamodel.indexes.map((index) => {
      const model = datamodel.models.find((m) => m.name === index.model)!;
      const cols = index.fields.map((f) => {
        const field = model.fields.find((x) => x.name === f.name)!;
        return field.dbName ?? field.name;
      });
      return `${model.dbName ?? model.name}(${cols.join(',')})${index.type === 'normal' ? '' : ' unique'}`;
    });
    expect([...have].sort()).toEqual([...new Set(want)].sort());
  });
});
