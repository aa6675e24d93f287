import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from './generated/client';

export type Db = PrismaClient;
export type { Prisma } from './generated/client';

/** A Prisma client on the pg driver adapter (Prisma 7 needs no engine binary at run time). */
export function createDb(databaseUrl: string, options: { poolSize?: number } = {}): Db {
  const pool = new Pool({ connectionString: databaseUrl, max: options.poolSize ?? 10 });
  // Every connection listens for errors for as long as it lives. The pool hands a connection out before its
  // taker (the adapter, for a transaction) listens, so a FATAL that arrives with it (Postgres shutting down)
  // would be an unhandled 'error' and end the process. The error still reaches the pool and the query: the
  // connection is marked unusable, its next query fails as unavailable, and it is dropped when released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const adapter = new PrismaPg(pool, { disposeExternalPool: true });
  return new PrismaClient({ adapter });
}
