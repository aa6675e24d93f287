import type { Pool, PoolClient } from 'pg';
import { guard } from './delivery/status';
import { uuidV7Floor, uuidV7Time } from './uuid-v7';

export { uuidV7Floor, uuidV7Time } from './uuid-v7';

/**
 * Upkeep of the time-partitioned history (docs/database.md, "Partitioned history"): `deliveries` and
 * `delivery_attempts` are partitioned by UUIDv7 ranges of the delivery id (an id range is a time range), `audit_events`
 * by `received_at`. The worker creates partitions ahead ({@link ensurePartitions}), drops whole partitions past the
 * retention ({@link dropExpiredPartitions}) and sweeps the DEFAULT partitions row by row ({@link
 * sweepDefaultPartitions}).
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

/**
 * How partition DDL waits for its locks. A DDL waiting for a lock makes every later query that needs a conflicting
 * one queue behind it, so it waits at most `timeoutMs` at a time (`lock_timeout`), gives up, lets the queue drain for
 * `pauseMs` (doubled after each try), and tries again, `tries` times in all; then the partition waits for the next
 * run. Queries therefore never queue behind upkeep for longer than `timeoutMs` at a time.
 */
export interface LockRetry {
  timeoutMs: number;
  tries: number;
  pauseMs: number;
}

/** {@link LockRetry} of upkeep: 100 ms at a time, 8 tries over about 6 s. */
export const PARTITION_LOCK_RETRY: LockRetry = { timeoutMs: 100, tries: 8, pauseMs: 50 };
/** Postgres' SQLSTATE of a lock not granted within `lock_timeout` (lock_not_available). */
const LOCK_NOT_AVAILABLE = '55P03';
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

/** A partition's name: `<table>_p<YYYYMMDD>` for a start at midnight UTC, `..._p<YYYYMMDDHH>` otherwise. */
export function partitionName(table: string, fromMs: number): string {
  const iso = new Date(fromMs).toISOString();
  const stamp =
    iso.slice(0, 10).replace(/-/g, '') +
    (fromMs % DAY === 0 ? '' : iso.slice(11, 13) + (fromMs % HOUR === 0 ? '' : iso.slice(14, 16)));
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
    const [from, to] =
      t.key === 'uuid' ? [uuidV7Time(m[1]!), uuidV7Time(m[2]!)] : [Date.parse(isoOf(m[1]!)), Date.parse(isoOf(m[2]!))];
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

/** Thrown by a DDL step to roll its transaction back and leave the partition as it is. */
class KeepPartition extends Error {}

/**
 * Runs `run` in a transaction whose locks wait at most `retry.timeoutMs`, again after a pause while a lock was not
 * granted (see {@link LockRetry}). Returns `done`, `busy` when every try found a lock taken, or `kept` when `run`
 * threw {@link KeepPartition}.
 */
async function withShortLocks(
  client: PoolClient,
  retry: LockRetry,
  run: () => Promise<void>,
): Promise<'done' | 'busy' | 'kept'> {
  for (let attempt = 1; ; attempt += 1) {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL lock_timeout = '${Math.max(1, Math.floor(retry.timeoutMs))}ms'`);
      await run();
      await client.query('COMMIT');
      return 'done';
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (error instanceof KeepPartition) return 'kept';
      if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error;
      if (attempt >= retry.tries) return 'busy';
      await new Promise((resolve) => setTimeout(resolve, retry.pauseMs * 2 ** (attempt - 1)));
    }
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
  options: { width: PartitionWidth; aheadMs?: number; lockRetry?: LockRetry },
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
        // A partition whose locks stay taken is left to the next run, and with it the rest of this table's: they are
        // created ahead, and until then rows of their range wait in the DEFAULT partition.
        if ((await createPartition(client, t, name, at, to, options.lockRetry ?? PARTITION_LOCK_RETRY)) === 'busy')
          break;
        existing.push({ name, from: at, to });
        existing.sort((a, b) => a.from - b.from);
        created.push(name);
        at = to;
      }
    }
    return created;
  });
}

/**
 * Creates a partition without taking the parent's ACCESS EXCLUSIVE lock (which `CREATE TABLE … PARTITION OF` and a
 * `LOCK TABLE` of the parent take, queueing every query on the table): the table is created on its own with a CHECK
 * constraint of the partition's bounds, so that attaching it scans nothing, and `ATTACH PARTITION` takes only SHARE
 * UPDATE EXCLUSIVE on the parent, which no query conflicts with. It does take ACCESS EXCLUSIVE on the DEFAULT partition
 * (checked for rows of the new range), taken first here, so no such row lands there between the move and the attach;
 * statements pruned to other partitions (the hot path's, by id) do not touch it.
 */
async function createPartition(
  client: PoolClient,
  t: HistoryTable,
  name: string,
  from: number,
  to: number,
  retry: LockRetry,
): Promise<'done' | 'busy'> {
  const [lo, hi] = [boundValue(t, from), boundValue(t, to)];
  const parent = quoteIdent(t.table);
  const def = quoteIdent(`${t.table}_default`);
  const key = quoteIdent(t.column);
  const table = quoteIdent(name);
  const bounds = quoteIdent(`${name}_bounds`);
  const storage = t.with ? ` WITH (${t.with})` : '';
  const outcome = await withShortLocks(client, retry, async () => {
    await client.query(`CREATE TABLE ${table} (LIKE ${parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)${storage}`);
    await client.query(
      `ALTER TABLE ${table} ADD CONSTRAINT ${bounds} CHECK (${key} IS NOT NULL AND ${key} >= '${lo}' AND ${key} < '${hi}')`,
    );
    await client.query(`LOCK TABLE ${def} IN ACCESS EXCLUSIVE MODE`);
    // Rows wait in the DEFAULT partition for this range only after a long upkeep outage: usually an index probe finds
    // none.
    await client.query(
      `WITH moved AS (DELETE FROM ${def} WHERE ${key} >= $1 AND ${key} < $2 RETURNING *) INSERT INTO ${table} SELECT * FROM moved`,
      [lo, hi],
    );
    await client.query(`ALTER TABLE ${parent} ATTACH PARTITION ${table} FOR VALUES FROM ('${lo}') TO ('${hi}')`);
    await client.query(`ALTER TABLE ${table} DROP CONSTRAINT ${bounds}`);
  });
  return outcome === 'done' ? 'done' : 'busy';
}

/** What one retention run removed. */
export interface DroppedPartitions {
  /** Partitions detached and dropped, by table. */
  dropped: Record<string, string[]>;
  /** Audit events still owed (waiting for fan-out, parked, or in a batch buffer) moved to the DEFAULT partition. */
  keptEvents: number;
  /**
   * Expired partitions kept for the next run: a `deliveries` partition holding a delivery still in flight (pending or
   * retrying, or leased), its `delivery_attempts` partition with it, and any partition whose locks stayed taken.
   */
  kept: string[];
}

/** A delivery in flight: it still has an attempt ahead, or one under way. */
const IN_FLIGHT = `(${guard.queued('')} OR leased_until IS NOT NULL)`;

/** Whether a deliveries partition (or the detached table it was) holds a delivery in flight. */
async function holdsDeliveriesInFlight(client: PoolClient, table: string): Promise<boolean> {
  const { rows } = await client.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${quoteIdent(table)} WHERE ${IN_FLIGHT}) AS found`,
  );
  return rows[0]?.found === true;
}

/**
 * Drops every partition whose whole range is older than `horizon`: no row-by-row DELETE, no dead tuples, no index
 * vacuum. Audit events of such a partition that are still owed to a webhook (a `pending_fanout` row, parked ones
 * included, or a `batch_items` entry) are first moved to the DEFAULT partition, in the transaction that detaches
 * their partition, and are swept from there once nothing is owed on them. A `deliveries` partition that holds a
 * delivery still in flight is kept, with its `delivery_attempts` partition, until a run finds none: checked before,
 * and again on the detached table inside the transaction (which then rolls back), so a delivery restarted meanwhile
 * is never dropped. `DETACH … CONCURRENTLY` is not open to tables with a DEFAULT partition; the detach takes the
 * parent's ACCESS EXCLUSIVE lock for a catalogue change, waiting for it in short tries ({@link LockRetry}). Null when
 * another worker holds the upkeep lock.
 */
export async function dropExpiredPartitions(
  pool: Pool,
  horizon: Date,
  options: { lockRetry?: LockRetry } = {},
): Promise<DroppedPartitions | null> {
  const retry = options.lockRetry ?? PARTITION_LOCK_RETRY;
  return withUpkeepLock(pool, async (client) => {
    const result: DroppedPartitions = { dropped: {}, keptEvents: 0, kept: [] };
    // Ranges of the deliveries partitions kept: their attempts are kept with them.
    const keptRanges: Partition[] = [];
    for (const t of HISTORY_TABLES) {
      const expired = (await listPartitions(client, t.table)).filter((p) => p.to <= horizon.getTime());
      for (const p of expired) {
        const keep = () => {
          result.kept.push(p.name);
          if (t.table === 'deliveries') keptRanges.push(p);
        };
        if (t.table === 'delivery_attempts' && keptRanges.some((k) => k.from < p.to && p.from < k.to)) {
          keep();
          continue;
        }
        if (t.table === 'deliveries' && (await holdsDeliveriesInFlight(client, p.name))) {
          keep();
          continue;
        }
        let moved = 0;
        const outcome = await withShortLocks(client, retry, async () => {
          await client.query(`ALTER TABLE ${quoteIdent(t.table)} DETACH PARTITION ${quoteIdent(p.name)}`);
          if (t.table === 'deliveries' && (await holdsDeliveriesInFlight(client, p.name))) throw new KeepPartition();
          if (t.table === 'audit_events') {
            const copied = await client.query(
              `INSERT INTO audit_events SELECT e.* FROM ${quoteIdent(p.name)} e
               WHERE (e.org_id, e.id) IN (
                 SELECT org_id, event_id FROM pending_fanout WHERE received_at >= $1 AND received_at < $2
                 UNION SELECT org_id, event_id FROM batch_items)`,
              [new Date(p.from).toISOString(), new Date(p.to).toISOString()],
            );
            moved = copied.rowCount ?? 0;
          }
          await client.query(`DROP TABLE ${quoteIdent(p.name)}`);
        });
        if (outcome !== 'done') {
          keep();
          continue;
        }
        result.keptEvents += moved;
        (result.dropped[t.table] ??= []).push(p.name);
      }
    }
    return result;
  });
}

/**
 * When {@link analyzeGrownPartitions} analyses a partition: once it holds `minPages` pages and has never been analysed,
 * then each time it has grown to `growth` times the pages it had when last analysed (or vacuumed).
 */
export interface StatisticsPolicy {
  minPages: number;
  growth: number;
}

/** 16 pages (128 kB, some 200 events), then at every fourfold growth: a handful of analyses in a partition's life. */
export const STATISTICS_POLICY: StatisticsPolicy = { minPages: 16, growth: 4 };

/**
 * Analyses the `audit_events` partitions whose statistics describe a much smaller table than they now are (`ANALYZE`
 * takes a sample of at most 30,000 rows, whatever the size). Returns the partitions analysed.
 *
 * Why: ingestion's probe for a client-chosen id (`insert_audit_events()`, step 2) runs from a plan kept for the
 * session. A plan made while a partition is empty and never analysed (every partition created ahead, until its day
 * comes) can probe it through `(org_id, received_at, id)`, the two indexes looking equally cheap at the size the
 * planner assumes, which reads every event of the organisation in that partition for each id; the plan is kept until
 * something invalidates it, and analysing the partition does. Autovacuum analyses a partition after its first 50
 * rows, but only on its next round (up to a minute later, never where it is off), and ingestion slows with every row
 * meanwhile. Partitions are analysed once they have rows, never ahead (an empty one analysed would be planned as a
 * sequential scan). Each takes its lock for at most `lockTimeoutMs` and waits for the next run otherwise.
 */
export async function analyzeGrownPartitions(
  pool: Pool,
  options: { policy?: StatisticsPolicy; lockTimeoutMs?: number } = {},
): Promise<string[]> {
  const { minPages, growth } = options.policy ?? STATISTICS_POLICY;
  // pg_relation_size is the table's size now; relpages and reltuples (-1 before a first analyse or vacuum) what the
  // planner was last told.
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     CROSS JOIN LATERAL (SELECT pg_relation_size(c.oid) / current_setting('block_size')::int AS pages) s
     WHERE i.inhparent = 'audit_events'::regclass AND c.relkind = 'r' AND s.pages >= $1
       AND (c.reltuples < 0 OR s.pages >= $2 * greatest(c.relpages, 1))
     ORDER BY c.relname`,
    [minPages, growth],
  );
  const analysed: string[] = [];
  for (const { name } of rows) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL lock_timeout = '${Math.max(1, Math.floor(options.lockTimeoutMs ?? 100))}ms'`);
      await client.query(`ANALYZE ${quoteIdent(name)}`);
      await client.query('COMMIT');
      analysed.push(name);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      // A partition being detached or dropped meanwhile waits for the next run, or is gone.
      if (!['55P03', '42P01'].includes(String((error as { code?: unknown }).code))) throw error;
    } finally {
      client.release();
    }
  }
  return analysed;
}

/** The tables rewritten or emptied row by row all day, which only vacuum keeps from bloating. */
export const CHURNED_TABLES = ['pending_fanout', 'batch_items', 'deliveries', 'webhook_tasks'] as const;

/**
 * Whether vacuum runs by itself: `autovacuum` of the server, and the churned tables (and their partitions) that turn it
 * off for themselves (`autovacuum_enabled = false`).
 */
export async function autovacuumState(pool: Pool): Promise<{ server: boolean; tablesWithout: string[] }> {
  const { rows } = await pool.query<{ server: string; tables: string[] | null }>(
    `SELECT current_setting('autovacuum') AS server,
       (SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_class c
        LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class parent ON parent.oid = i.inhparent
        WHERE coalesce(parent.relname, c.relname) = ANY ($1::text[]) AND c.relkind = 'r'
          -- Any spelling of false that Postgres takes for a boolean option (off, no, 0, f...).
          AND EXISTS (SELECT 1 FROM unnest(c.reloptions) AS o
                      WHERE o ~* '^autovacuum_enabled=(f|fa|fal|fals|false|n|no|of|off|0)$')) AS tables`,
    [CHURNED_TABLES],
  );
  return { server: rows[0]?.server === 'on', tablesWithout: rows[0]?.tables ?? [] };
}

const CHUNK = 5000;

/**
 * Deletes, in chunks, the rows of the DEFAULT partitions older than `horizon`: deliveries created before it (ids no
 * partition covers, from a clock far off or an upkeep outage longer than the week ahead), attempts made before it (an
 * attempt older than the horizon belongs to a delivery older still), and audit events received before it on which
 * nothing is owed (not waiting for fan-out, parked ones included, and not in a batch buffer). Rows reach these
 * partitions rarely, so this stays small.
 */
export async function sweepDefaultPartitions(
  pool: Pool,
  horizon: Date,
): Promise<{ deliveries: number; attempts: number; events: number }> {
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
    `DELETE FROM deliveries_default WHERE id IN (SELECT id FROM deliveries_default WHERE created_at < $1 AND NOT ${IN_FLIGHT} LIMIT $2)`,
  );
  const attempts = await drain(
    `DELETE FROM delivery_attempts_default WHERE (delivery_id, id) IN (
       SELECT a.delivery_id, a.id FROM delivery_attempts_default a WHERE a.at < $1
         AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = a.delivery_id) LIMIT $2)`,
  );
  const events = await drain(
    `DELETE FROM audit_events_default WHERE (org_id, id, received_at) IN (
       SELECT e.org_id, e.id, e.received_at FROM audit_events_default e WHERE e.received_at < $1
         AND NOT EXISTS (SELECT 1 FROM pending_fanout p WHERE p.org_id = e.org_id AND p.event_id = e.id)
         AND NOT EXISTS (SELECT 1 FROM batch_items b WHERE b.org_id = e.org_id AND b.event_id = e.id) LIMIT $2)`,
  );
  return { deliveries, attempts, events };
}
