import type { Logger } from '@gatehook/core/logger';
import type { Db } from '@gatehook/db/client';
import { sqlPool } from '@gatehook/db/client';
import {
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
