import { Queue, type Job } from 'bullmq';
import type { Logger } from '@gatehook/core/logger';
import { within } from '@gatehook/core/readiness';
import type { RedisConnection } from '@gatehook/core/redis';
import { queuePrefix } from '@gatehook/delivery';
import { QueueConsumer } from './consumers';

/** The periodic work of the deployment, by job scheduler id. */
export type PeriodicName = 'reconcile' | 'retention' | 'statistics';

export interface PeriodicDeps {
  connection: RedisConnection;
  /** REDIS_PREFIX: the queue is `{<prefix>:periodic}`. */
  prefix: string;
  /** How often each runs (ms). */
  every: Record<PeriodicName, number>;
  run: Record<PeriodicName, () => Promise<unknown>>;
  logger: Logger;
  onRun?: (name: PeriodicName, outcome: 'ok' | 'failed') => void;
  onRestart?: (queue: string) => void;
  /** Called when a scheduler was missing or stuck and was put back (a Redis restarted empty, a failover). */
  onRescheduled?: (name: PeriodicName) => void;
  /** Called when the schedulers could not be looked at (Redis unreachable). */
  onError?: () => void;
}

export interface Periodic {
  queue: Queue;
  consumer: QueueConsumer;
  close(): Promise<void>;
}

/**
 * Periodic work as BullMQ job schedulers on one queue of the deployment: each scheduler makes one job per interval
 * whatever the number of workers (every worker upserts the same schedulers; an upsert with the same interval is a
 * no-op for the schedule), and one worker runs it. A worker that dies while running one leaves a job whose lock
 * expires: BullMQ's stalled-job check hands it to another worker, and the scheduler's next job was queued when this
 * one started, so the runs go on. A run that fails is logged and counted, and the next interval runs anyway.
 */
export async function startPeriodic(deps: PeriodicDeps): Promise<Periodic> {
  const prefix = queuePrefix(deps.prefix, 'periodic');
  const queue = new Queue('periodic', { connection: deps.connection, prefix });
  const names = Object.keys(deps.every) as PeriodicName[];
  const schedule = (name: PeriodicName) =>
    queue.upsertJobScheduler(
      name,
      { every: deps.every[name] },
      { name, opts: { attempts: 1, removeOnComplete: true, removeOnFail: { count: 100 } } },
    );
  for (const name of names) await schedule(name);

  // The schedulers live in Redis: a Redis restarted empty (or FLUSHALL) loses them, and a failover may lose the next
  // job of one. Every worker looks at them as often as the reconciler runs (at most every 5 s) and puts back one that
  // is missing or whose next run is overdue by two intervals and a minute: at worst one extra run, never none.
  const keep = async () => {
    for (const name of names) {
      const scheduler = await queue.getJobScheduler(name);
      const overdueBy = scheduler?.next === undefined ? 0 : Date.now() - scheduler.next;
      if (scheduler && overdueBy < 2 * deps.every[name] + 60_000) continue;
      deps.logger.warn(
        { job: name, missing: !scheduler, overdueMs: overdueBy },
        'periodic job scheduler missing or stuck: scheduling it again',
      );
      await schedule(name);
      deps.onRescheduled?.(name);
    }
  };
  let keeping: Promise<void> | null = null;
  const keeper = setInterval(
    () => {
      keeping ??= keep()
        .catch((error: unknown) => {
          deps.onError?.();
          deps.logger.warn({ err: (error as Error).message }, 'could not look at the periodic job schedulers');
        })
        .finally(() => (keeping = null));
    },
    Math.min(5_000, ...names.map((n) => deps.every[n])),
  );
  keeper.unref();
  const consumer = new QueueConsumer({
    queue,
    processor: async (job: Job) => {
      const name = job.name as PeriodicName;
      const run = deps.run[name];
      if (!run) return null;
      try {
        // A run never holds its slot forever: one stuck on a connection that will not answer (a failover under way)
        // fails after a minute or its interval, whichever is longer, and the next interval's run starts afresh.
        const result = await within(run(), Math.max(60_000, deps.every[name]));
        deps.onRun?.(name, 'ok');
        return result ?? null;
      } catch (error) {
        deps.onRun?.(name, 'failed');
        deps.logger.error({ job: name, err: (error as Error).message }, 'periodic run failed');
        throw error;
      }
    },
    // One per job: a long retention sweep never holds back the reconciler or the statistics of the same worker.
    worker: { connection: deps.connection, prefix, concurrency: names.length },
    logger: deps.logger,
    ...(deps.onRestart ? { onRestart: deps.onRestart } : {}),
  });
  return {
    queue,
    consumer,
    async close() {
      clearInterval(keeper);
      await keeping;
      await consumer.close();
      await queue.close();
    },
  };
}
