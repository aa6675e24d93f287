import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client';

export type Db = PrismaClient;
export type { Prisma } from './generated/client';

/** A Prisma client on the pg driver adapter (Prisma 7 needs no engine binary at run time). */
export function createDb(databaseUrl: string, options: { poolSize?: number } = {}): Db {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: options.poolSize ?? 10 });
  return new PrismaClient({ adapter });
}
