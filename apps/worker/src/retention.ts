import type { Logger } from '@gatehook/core/logger';
import type { Db } from '@gatehook/db/client';
import { sqlPool } from '@gatehook/db/client';
import {
  autovacuumState,
  CHURNED_TABLES,
  dropExpiredPartitions,
  ensurePartitions,
  sweepDefaultPartitions,
  type PartitionWidth,
} from '@gatehook/db/partitions';

/**
 * Retention and partition upkeep of the history (docs/database.md, "Partitioned history"), one run: creates the
 * partitions ahead, drops whole partitions whose range is older than the retention (deliveries with their attempts,
 * audit events by when the service received them, events still owed to a webhook being kept), then sweeps the
 * DEFAULT partitions in chunks. Safe to run from any number of workers at once: partition DDL is done by one of
 * them at a time. Deliveries are kept at least `retentionDays` and at most one partition width longer.
 */
export async function sweepRetention(
  db: Db,
  retentionDays: number,
  logger?: Logger,
  options: { width?: PartitionWidth; now?: Date } = {},
): Promise<{ deliveries: number; events: number; partitionsDropped: number; partitionsCreated: number }> {
  const pool = sqlPool(db);
  const now = options.now ?? new Date();
  const horizon = new Date(now.getTime() - retentionDays * 86_400_000);
  const created = (await ensurePartitions(pool, now, { width: options.width ?? 'day' })) ?? [];
  const dropped = await dropExpiredPartitions(pool, horizon);
  const swept = await sweepDefaultPartitions(pool, horizon);
  const partitionsDropped = Object.values(dropped?.dropped ?? {}).reduce((n, names) => n + names.length, 0);
  if (
    created.length ||
    partitionsDropped ||
    dropped?.kept.length ||
    swept.deliveries ||
    swept.events ||
    swept.attempts
  ) {
    logger?.info(
      {
        created,
        dropped: dropped?.dropped ?? {},
        kept: dropped?.kept ?? [],
        keptEvents: dropped?.keptEvents ?? 0,
        ...swept,
        horizon: horizon.toISOString(),
      },
      'retention sweep',
    );
  }
  return { deliveries: swept.deliveries, events: swept.events, partitionsDropped, partitionsCreated: created.length };
}

/**
 * Warns, once at start, when vacuum does not run by itself (docs/operations.md, "Deploy", Postgres): the outbox, the
 * batch buffer, the deliveries and the tasks are rewritten or emptied row by row all day, and without vacuum their
 * dead rows are never reclaimed, so every read of them slows with the traffic served. Returns whether it warned.
 */
export async function warnWithoutAutovacuum(db: Db, logger: Logger): Promise<boolean> {
  const { server, tablesWithout } = await autovacuumState(sqlPool(db));
  if (server && tablesWithout.length === 0) return false;
  logger.warn(
    { autovacuum: server ? 'on' : 'off', tablesWithout, churned: CHURNED_TABLES },
    'autovacuum does not run on tables this service churns: their dead rows are never reclaimed; turn it on',
  );
  return true;
}
