import type { Pool, PoolClient } from 'pg';

/**
 * Upkeep of the time-partitioned history (docs/database.md, "Partitioned history"): `deliveries` and
 * `delivery_attempts` are partitioned by UUIDv7 ranges of the delivery id (an id range is a time range), `audit_events`
 * by `received_at`. The worker creates partitions ahead ({@link ensurePartitions}), drops whole partitions past the
 * retention ({@link dropExpiredPartitions}) and sweeps the DEFAULT partitions row by row ({@link sweepDefaultPartitions}).
 */

/** Width of one partition (`HISTORY_PARTITION`); bounds are UTC, weeks start on Monday. */
export type PartitionWidth = 'hour' | 'day' | 'week' | 'month';

interface HistoryTable {
  table: string;
  /** `uuid`: RANGE over a UUIDv7 column; `time`: RANGE over a timestamptz column. */
  key: 'uuid' | 'time';
  column: string;
  /** Storage parameters of each partition. */
  with?: string;
}

/** Every partitioned table, in the order partitions are created and dropped. */
export const HISTORY_TABLES: readonly HistoryTable[] = [
  // Room on each page for an update that touches no indexed column (the lease) to stay on its page (HOT).
  { table: 'deliveries', key: 'uuid', column: 'id', with: 'fillfactor = 90' },
  { table: 'delivery_attempts', key: 'uuid', column: 'delivery_id' },
  { table: 'audit_events', key: 'time', column: 'received_at' },
];

/** Advisory lock key of partition upkeep: one worker at a time creates and drops partitions. */
const UPKEEP_LOCK = 0x6768_7031; // "ghp1"
/** A DDL that waits longer than this for its lock gives up and is retried at the next run, never queueing traffic. */
const LOCK_TIMEOUT = '5s';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The start (UTC) of the period of `width` containing `ms`. */
export function periodStart(ms: number, width: PartitionWidth): number {
  const d = new Date(ms);
  switch (width) {
    case 'hour':
      return Math.floor(ms / HOUR) * HOUR;
    case 'day':
      return Math.floor(ms / DAY) * DAY;
    case 'week': {
      const day = Math.floor(ms / DAY) * DAY;
      return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
    }
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
}

/** The end (UTC, exclusive) of the period of `width` containing `ms`. */
export function periodEnd(ms: number, width: PartitionWidth): number {
  const start = periodStart(ms, width);
  switch (width) {
    case 'hour':
      return start + HOUR;
    case 'day':
      return start + DAY;
    case 'week':
      return start + 7 * DAY;
    case 'month': {
      const d = new Date(start);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

/** How far ahead partitions exist: a week, or two partitions when they are wider. */
export function defaultAheadMs(width: PartitionWidth): number {
  return Math.max(7 * DAY, 2 * (periodEnd(0, width) - periodStart(0, width)));
}

/** The lowest UUIDv7 of an instant: its Unix milliseconds in the first 48 bits, every other bit zero. */
export function uuidV7Floor(ms: number): string {
  const hex = Math.floor(ms).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The instant in the first 48 bits of a UUID (the creation time of a UUIDv7). */
export function uuidV7Time(uuid: string): number {
  return parseInt(uuid.replace(/-/g, '').slice(0, 12), 16);
}

/** A partition's name: `<table>_p<YYYYMMDD>` for a start at midnight UTC, `..._p<YYYYMMDDHH>` otherwise. */
export function partitionName(table: string, fromMs: number): string {
  const iso = new Date(fromMs).toISOString();
  const stamp = iso.slice(0, 10).replace(/-/g, '') + (fromMs % DAY === 0 ? '' : iso.slice(11, 13) + (fromMs % HOUR === 0 ? '' : iso.slice(14, 16)));
  return `${table}_p${stamp}`;
}

/** One attached partition with its bounds as instants. */
export interface Partition {
  name: string;
  from: number;
  to: number;
}

const boundValue = (t: HistoryTable, ms: number) => (t.key === 'uuid' ? uuidV7Floor(ms) : new Date(ms).toISOString());
const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The partitions of a table but its DEFAULT, ordered by their lower bound. */
export async function listPartitions(client: Pool | PoolClient, table: string): Promise<Partition[]> {
  const t = HISTORY_TABLES.find((x) => x.table === table);
  if (!t) throw new Error(`${table} is not a partitioned history table`);
  // Bounds are read as text through a cast of the partition bound expression's values, never parsed from a
  // DateStyle-dependent rendering.
  const { rows } = await client.query<{ name: string; bound: string }>(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = $1::regclass AND c.relkind IN ('r', 'p')`,
    [table],
  );
  const partitions: Partition[] = [];
  for (const row of rows) {
    const m = /^FOR VALUES FROM \('([^']+)'\) TO \('([^']+)'\)$/.exec(row.bound);
    if (!m) continue; // DEFAULT
    const [from, to] = t.key === 'uuid' ? [uuidV7Time(m[1]!), uuidV7Time(m[2]!)] : [Date.parse(isoOf(m[1]!)), Date.parse(isoOf(m[2]!))];
    partitions.push({ name: row.name, from, to });
  }
  return partitions.sort((a, b) => a.from - b.from);
}

// '2026-11-26 00:00:00+00' (upkeep sessions run with TimeZone UTC and DateStyle ISO) → an ISO 8601 string.
const isoOf = (text: string) => text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');

async function withUpkeepLock<T>(pool: Pool, run: (client: PoolClient) => Promise<T>): Promise<T | null> {
  const client = await pool.connect();
  try {
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [UPKEEP_LOCK]);
    if (!rows[0]?.ok) return null; // another worker is at it
    try {
      await client.query(`SET TimeZone = 'UTC'; SET DateStyle = 'ISO'`);
      return await run(client);
    } finally {
      await client.query('RESET TimeZone; RESET DateStyle').catch(() => undefined);
      await client.query('SELECT pg_advisory_unlock($1)', [UPKEEP_LOCK]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}

async function inTransaction(client: PoolClient, run: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    await run();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * Creates the partitions of every history table that cover [start of the period of `now`, now + ahead): where no
 * partition covers an instant, a partition of `width` is created, cut short where an existing one begins (so a
 * change of width never overlaps). Rows that waited in the DEFAULT partition for that range (a worker that did not
 * run for longer than `ahead`) are moved into the new partition in the transaction that attaches it. Returns the
 * partitions created; null when another worker holds the upkeep lock.
 */
export async function ensurePartitions(
  pool: Pool,
  now: Date,
  options: { width: PartitionWidth; aheadMs?: number },
): Promise<string[] | null> {
  const { width } = options;
  const until = now.getTime() + (options.aheadMs ?? defaultAheadMs(width));
  return withUpkeepLock(pool, async (client) => {
    const created: string[] = [];
    for (const t of HISTORY_TABLES) {
      const existing = await listPartitions(client, t.table);
      let at = periodStart(now.getTime(), width);
      while (at < until) {
        const covering = existing.find((p) => p.from <= at && at < p.to);
        if (covering) {
          at = covering.to;
          continue;
        }
        const nextStart = existing.find((p) => p.from > at)?.from ?? Number.POSITIVE_INFINITY;
        const to = Math.min(periodEnd(at, width), nextStart);
        const name = partitionName(t.table, at);
        await createPartition(client, t, name, at, to);
        existing.push({ name, from: at, to });
        existing.sort((a, b) => a.from - b.from);
        created.push(name);
        at = to;
      }
    }
    return created;
  });
}

async function createPartition(client: PoolClient, t: HistoryTable, name: string, from: number, to: number): Promise<void> {
  const [lo, hi] = [boundValue(t, from), boundValue(t, to)];
  const parent = quoteIdent(t.table);
  const def = quoteIdent(`${t.table}_default`);
  const key = quoteIdent(t.column);
  const storage = t.with ? ` WITH (${t.with})` : '';
  await inTransaction(client, async () => {
    // The lock CREATE ... PARTITION OF takes anyway, taken first: parent before partition, the order every query
    // takes them in (no deadlock), and no row lands in the DEFAULT partition's part of the range between the check
    // and the attach. Brief: the check is an index probe, and rows to move exist only after a long upkeep outage.
    await client.query(`LOCK TABLE ${parent} IN ACCESS EXCLUSIVE MODE`);
    const { rows } = await client.query<{ waiting: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${def} WHERE ${key} >= $1 AND ${key} < $2) AS waiting`,
      [lo, hi],
    );
    if (!rows[0]?.waiting) {
      await client.query(`CREATE TABLE ${quoteIdent(name)} PARTITION OF ${parent} FOR VALUES FROM ('${lo}') TO ('${hi}')${storage}`);
      return;
    }
    await client.query(`CREATE TABLE ${quoteIdent(name)} (LIKE ${parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)${storage}`);
    await client.query(
      `WITH moved AS (DELETE FROM ${def} WHERE ${key} >= $1 AND ${key} < $2 RETURNING *) INSERT INTO ${quoteIdent(name)} SELECT * FROM moved`,
      [lo, hi],
    );
    await client.query(`ALTER TABLE ${parent} ATTACH PARTITION ${quoteIdent(name)} FOR VALUES FROM ('${lo}') TO ('${hi}')`);
  });
}

/** What one retention run removed. */
export interface DroppedPartitions {
  /** Partitions detached and dropped, by table. */
  dropped: Record<string, string[]>;
  /** Audit events still owed (waiting for fan-out, parked, or in a batch buffer) moved to the DEFAULT partition. */
  keptEvents: number;
}

/**
 * Drops every partition whose whole range is older than `horizon`: no row-by-row DELETE, no dead tuples, no index
 * vacuum. Audit events of such a partition that are still owed to a webhook (a `pending_fanout` row, parked ones
 * included, or a `batch_items` entry) are first moved to the DEFAULT partition, in the transaction that detaches
 * their partition, and are swept from there once nothing is owed on them. Null when another worker holds the upkeep
 * lock.
 */
export async function dropExpiredPartitions(pool: Pool, horizon: Date): Promise<DroppedPartitions | null> {
  return withUpkeepLock(pool, async (client) => {
    const result: DroppedPartitions = { dropped: {}, keptEvents: 0 };
    for (const t of HISTORY_TABLES) {
      const expired = (await listPartitions(client, t.table)).filter((p) => p.to <= horizon.getTime());
      for (const p of expired) {
        await inTransaction(client, async () => {
          await client.query(`ALTER TABLE ${quoteIdent(t.table)} DETACH PARTITION ${quoteIdent(p.name)}`);
          if (t.table === 'audit_events') {
            const moved = await client.query(
              `INSERT INTO audit_events SELECT e.* FROM ${quoteIdent(p.name)} e
               WHERE (e.org_id, e.id) IN (
                 SELECT org_id, event_id FROM pending_fanout WHERE received_at >= $1 AND received_at < $2
                 UNION SELECT org_id, event_id FROM batch_items)`,
              [new Date(p.from).toISOString(), new Date(p.to).toISOString()],
            );
            result.keptEvents += moved.rowCount ?? 0;
          }
          await client.query(`DROP TABLE ${quoteIdent(p.name)}`);
        });
        (result.dropped[t.table] ??= []).push(p.name);
      }
    }
    return result;
  });
}

const CHUNK = 5000;

/**
 * Deletes, in chunks, the rows of the DEFAULT partitions older than `horizon`: deliveries created before it (ids
 * from before the upgrade, or from a clock far off), attempts made before it (an attempt older than the horizon
 * belongs to a delivery older still), and audit events received before it on which nothing is owed (not waiting
 * for fan-out, parked ones included, and not in a batch buffer). Rows reach these partitions rarely, so this stays
 * small once the pre-upgrade rows have aged out.
 */
export async function sweepDefaultPartitions(pool: Pool, horizon: Date): Promise<{ deliveries: number; attempts: number; events: number }> {
  const at = horizon.toISOString();
  const drain = async (sql: string) => {
    let total = 0;
    for (;;) {
      const { rowCount } = await pool.query(sql, [at, CHUNK]);
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < CHUNK) return total;
    }
  };
  const deliveries = await drain(
    `DELETE FROM deliveries_default WHERE id IN (SELECT id FROM deliveries_default WHERE created_at < $1 LIMIT $2)`,
  );
  const attempts = await drain(
    `DELETE FROM delivery_attempts_default WHERE (delivery_id, id) IN (
       SELECT delivery_id, id FROM delivery_attempts_default WHERE at < $1 LIMIT $2)`,
  );
  const events = await drain(
    `DELETE FROM audit_events_default WHERE (org_id, id, received_at) IN (
       SELECT e.org_id, e.id, e.received_at FROM audit_events_default e WHERE e.received_at < $1
         AND NOT EXISTS (SELECT 1 FROM pending_fanout p WHERE p.org_id = e.org_id AND p.event_id = e.id)
         AND NOT EXISTS (SELECT 1 FROM batch_items b WHERE b.org_id = e.org_id AND b.event_id = e.id) LIMIT $2)`,
  );
  return { deliveries, attempts, events };
}
