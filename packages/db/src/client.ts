import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from './generated/client';
import { within } from '@gatehook/core/readiness';
import { uuidV7Floor } from './uuid-v7';

export type Db = PrismaClient;
export type { Prisma } from './generated/client';
export type { Pool };

const pools = new WeakMap<Db, Pool>();

let statementsSent = 0;

/**
 * Statements this process has sent to Postgres through any pool made by createDb (Prisma's and the hot path's
 * alike): each is one round trip. Exposed as `gatehook_db_statements_total` so `pnpm bench` can count round
 * trips per delivery.
 */
export function statementCount(): number {
  return statementsSent;
}

/**
 * The pg pool under a client: the hot path (outbox, deliveries, attempts) speaks SQL to it directly with named
 * prepared statements, sharing the process's one pool (and its size from config) with Prisma.
 */
export function sqlPool(db: Db): Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('this client was not made by createDb');
  return pool;
}

/** A Prisma client on the pg driver adapter (Prisma 7 needs no engine binary at run time). */
/** How long an interactive transaction waits for a connection, and how long it may run. */
export const TRANSACTION_MAX_WAIT_MS = 10_000;
export const TRANSACTION_TIMEOUT_MS = 15_000;

export function createDb(databaseUrl: string, options: { poolSize?: number } = {}): Db {
  const max = options.poolSize ?? 10;
  // A fixed-size pool: a connection once opened stays open (pg's default closes one idle for 10 s). A fresh
  // connection costs a backend start and then, on its first statements, loading the catalog of every partition
  // they touch (tens of milliseconds, see warmPool): closing idle ones made every burst after a quiet spell pay it.
  const pool = new Pool({ connectionString: databaseUrl, max, min: max });
  // Every connection listens for errors for as long as it lives. The pool hands a connection out before its
  // taker (the adapter, for a transaction) listens, so a FATAL that arrives with it (Postgres shutting down)
  // would be an unhandled 'error' and end the process. The error still reaches the pool and the query: the
  // connection is marked unusable, its next query fails as unavailable, and it is dropped when released.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    const query = client.query;
    // Counted at the one place every statement passes; the arguments go through untouched.
    client.query = function countedQuery(this: typeof client, ...args: unknown[]) {
      statementsSent += 1;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof client.query;
  });
  // An idle connection that dies (Postgres restarted, the database dropped, a proxy's idle timeout) is removed
  // by the pool, which then emits 'error': without a listener that would end the process. The next checkout
  // opens a fresh connection, and a query on a dead one fails as unavailable (503) on its own path.
  pool.on('error', () => undefined);
  const adapter = new PrismaPg(pool, { disposeExternalPool: true });
  // Interactive transactions (management writes) wait up to 10 s for a connection and may run 15 s: Prisma's 2 s
  // and 5 s defaults turned a busy pool or a loaded machine into 500s of webhook saves and key issues.
  const db = new PrismaClient({
    adapter,
    transactionOptions: { maxWait: TRANSACTION_MAX_WAIT_MS, timeout: TRANSACTION_TIMEOUT_MS },
  });
  // Prisma disposes of the pool only if it connected itself; a client used only through sqlPool must close too.
  const disconnect = db.$disconnect.bind(db);
  db.$disconnect = async () => {
    await disconnect();
    if (!pool.ended) await pool.end();
  };
  pools.set(db, pool);
  return db;
}

/**
 * The statement that warms a fresh connection: it plans and runs a lookup on each table of the hot path, so that
 * the backend loads their catalog entries (every partition of `audit_events`, which ingestion probes by id; this
 * period's partitions of `deliveries` and `delivery_attempts`) before the first request instead of during it. It
 * reads nothing (the ids are the nil UUID and the floor of now) and takes no lock but the usual share locks.
 */
const WARM_UP = `SELECT (SELECT 1 FROM audit_events WHERE org_id = $1 AND id = $1 LIMIT 1),
  (SELECT 1 FROM pending_fanout WHERE org_id = $1 AND event_id = $1),
  (SELECT 1 FROM deliveries WHERE id = $2),
  (SELECT 1 FROM delivery_attempts WHERE delivery_id = $2 LIMIT 1),
  (SELECT 1 FROM webhooks WHERE id = $1)`;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
/** Longest a process waits at start for its connections to open and warm. */
const WARM_UP_TIMEOUT_MS = 5_000;

/**
 * Opens every connection of a client's pool at once and warms each ({@link WARM_UP}), for a process to await before
 * it takes work: a fresh backend spends 5 to 15 ms starting and some 20 ms more on its first statement over the
 * partitioned tables, which would otherwise fall on the first requests after a start. The pool keeps its connections
 * (createDb), so this is paid once per process. Never throws, and never holds the start longer than `timeoutMs`
 * (5 s): on a database that cannot be reached, is not migrated yet or does not answer in time, it returns
 * `warmed: false` and connections open on demand as usual.
 */
export async function warmPool(
  db: Db,
  options: { timeoutMs?: number } = {},
): Promise<{ connections: number; warmed: boolean }> {
  const pool = sqlPool(db);
  const floor = uuidV7Floor(Date.now());
  const warming = Promise.allSettled(
    Array.from({ length: pool.options.max }, async () => {
      const client = await pool.connect();
      try {
        await client.query(WARM_UP, [NIL_UUID, floor]);
      } finally {
        client.release();
      }
    }),
  ).then((outcomes) => outcomes.every((o) => o.status === 'fulfilled'));
  // A database that accepts connections and never answers must not hold the process's start: past the bound the
  // process goes on, and the connections still opening join the pool when they can.
  const warmed = await within(warming, options.timeoutMs ?? WARM_UP_TIMEOUT_MS).catch(() => false);
  return { connections: pool.totalCount, warmed };
}
