// Retention of the partitioned history (docs/database.md, "Partitioned history"): a day of deliveries (each with
// one attempt) dropped as whole partitions, next to the row-by-row DELETE of the same rows in 5,000-row chunks (the
// sweep as it ran before partitioning) and the VACUUM that DELETE leaves owing. Runs in a database of its own.
// Not part of the default `pnpm bench` (seeding takes minutes): BENCH_ONLY=retention runs it; BENCH_RETENTION_ROWS
// sets the deliveries per day (default 5,000,000).
import { randomBytes, randomUUID } from 'node:crypto';
import { createDb, sqlPool, type Pool } from '@gatehook/db/client';
import { applyMigrations } from '@gatehook/db/migrate';
import {
  dropExpiredPartitions,
  ensurePartitions,
  partitionName,
  periodStart,
  uuidV7Floor,
} from '@gatehook/db/partitions';
import type { Figure } from './measure';

const ROWS = Number(process.env.BENCH_RETENTION_ROWS ?? 5_000_000);
const SERVER = process.env.BENCH_PG_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
const DAY = 86_400_000;
const CHUNK = 5000;
const SEED_CHUNK = 250_000;

/** Seeds `rows` deliveries with one attempt each, their UUIDv7 ids spread over the day starting at `day`. */
async function seedDay(pool: Pool, day: number, rows: number, orgId: string, webhookId: string): Promise<void> {
  const step = DAY / rows;
  for (let from = 0; from < rows; from += SEED_CHUNK) {
    const to = Math.min(rows, from + SEED_CHUNK) - 1;
    // A delivery about the size the issue measured: a 1 KB encrypted body, one event id, the usual columns.
    await pool.query(
      `WITH s AS (
         SELECT lpad(to_hex(($1::bigint + floor(g * $2::float8))::bigint), 12, '0') AS h, md5(g::text || random()::text) AS r,
                to_timestamp(($1::bigint + floor(g * $2::float8)) / 1000.0) AS ts
         FROM generate_series($3::int, $4::int) AS g
       ), d AS (
         INSERT INTO deliveries (id, org_id, webhook_id, status, event_ids, event_count, body_encrypted, content_type, attempt_count,
           cycle_attempts, created_at, updated_at)
         SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-8' || substr(r, 4, 3) || '-' || substr(r, 7, 12))::uuid,
           $5, $6, 'succeeded', ARRAY[gen_random_uuid()], 1, repeat(r, 32), 'application/json', 1, 1, ts, ts
         FROM s RETURNING id, created_at
       )
       INSERT INTO delivery_attempts (delivery_id, webhook_id, at, status_code, duration_ms, response_snippet)
       SELECT id, $6, created_at, 200, 35, '{"ok":true}' FROM d`,
      [day, step, from, to, orgId, webhookId],
    );
  }
}

/** Dead tuples Postgres counts for a table, after this backend's statistics are flushed. */
async function deadTuples(pool: Pool, table: string): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_stat_force_next_flush()');
    // A fresh transaction sees the flushed counters (statistics are cached per transaction).
    await new Promise((r) => setTimeout(r, 200));
    const { rows } = await client.query<{ n: string }>(
      `SELECT n_dead_tup AS n FROM pg_stat_user_tables WHERE relname = $1`,
      [table],
    );
    return Number(rows[0]?.n ?? 0);
  } finally {
    client.release();
  }
}

export async function retentionFigures(): Promise<Figure[]> {
  const dbName = `gatehook_bench_retention_${randomBytes(4).toString('hex')}`;
  const url = `${SERVER}/${dbName}`;
  await applyMigrations(url);
  const db = createDb(url, { poolSize: 2 });
  const pool = sqlPool(db);
  try {
    const [orgId, webhookId] = [randomUUID(), randomUUID()];
    await pool.query(`INSERT INTO organizations (id, name) VALUES ($1, 'bench')`, [orgId]);
    await pool.query(
      `INSERT INTO webhooks (id, org_id, name, url_encrypted, url_mask, events, secret_encrypted, active_since, updated_at)
       VALUES ($1, $2, 'bench', 'x', 'https://h/…abcd', '{*}', 's', now(), now())`,
      [webhookId, orgId],
    );
    // Two past days: the first is dropped as partitions, the second is deleted row by row.
    const dropped = periodStart(Date.now() - 40 * DAY, 'day');
    const deleted = dropped + DAY;
    await ensurePartitions(pool, new Date(dropped), { width: 'day', aheadMs: 2 * DAY });
    await seedDay(pool, dropped, ROWS, orgId, webhookId);
    await seedDay(pool, deleted, ROWS, orgId, webhookId);
    await pool.query('VACUUM ANALYZE deliveries, delivery_attempts');

    let started = performance.now();
    const result = await dropExpiredPartitions(pool, new Date(dropped + DAY));
    const dropMs = performance.now() - started;
    if (!result?.dropped.deliveries?.includes(partitionName('deliveries', dropped)))
      throw new Error('the day partition was not dropped');

    // The sweep before partitioning: chunks of 5,000 by an index, deliveries then their attempts.
    const [lo, hi] = [uuidV7Floor(deleted), uuidV7Floor(deleted + DAY)];
    started = performance.now();
    for (;;) {
      const { rowCount } = await pool.query(
        `DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE id >= $1 AND id < $2 LIMIT ${CHUNK})`,
        [lo, hi],
      );
      if ((rowCount ?? 0) < CHUNK) break;
    }
    for (;;) {
      const { rowCount } = await pool.query(
        `DELETE FROM delivery_attempts WHERE (delivery_id, id) IN (SELECT delivery_id, id FROM delivery_attempts WHERE delivery_id >= $1 AND delivery_id < $2 LIMIT ${CHUNK})`,
        [lo, hi],
      );
      if ((rowCount ?? 0) < CHUNK) break;
    }
    const deleteMs = performance.now() - started;
    const dead =
      (await deadTuples(pool, partitionName('deliveries', deleted))) +
      (await deadTuples(pool, partitionName('delivery_attempts', deleted)));
    started = performance.now();
    await pool.query(`VACUUM ${partitionName('deliveries', deleted)}, ${partitionName('delivery_attempts', deleted)}`);
    const vacuumMs = performance.now() - started;

    const rows = `${ROWS.toLocaleString('en-US')} deliveries + attempts`;
    return [
      {
        figure: `retention: drop a day's partitions (${rows})`,
        value: Math.round(dropMs),
        unit: 'ms',
        reference: 'DELETE of the same rows',
        referenceValue: Math.round(deleteMs),
        ratio: Number((dropMs / deleteMs).toFixed(4)),
      },
      {
        figure: 'retention: dead tuples left by dropping partitions',
        value: 0,
        unit: 'tuples',
        reference: 'left by the DELETE',
        referenceValue: dead,
        ratio: null,
      },
      {
        figure: 'retention: VACUUM owed after the DELETE',
        value: Math.round(vacuumMs),
        unit: 'ms',
        reference: null,
        referenceValue: null,
        ratio: null,
      },
    ];
  } finally {
    await db.$disconnect();
    const admin = createDb(`${SERVER}/postgres`, { poolSize: 1 });
    await sqlPool(admin).query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await admin.$disconnect();
  }
}
