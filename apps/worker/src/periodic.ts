import { Queue, type Job } from 'bullmq';
import type { Logger } from '@gatehook/core/logger';
import type { RedisConnection } from '@gatehook/core/redis';
import { queuePrefix } from '@gatehook/delivery/jobs';
import { QueueConsumer } from './consumers';

/** The periodic work of the deployment, by job scheduler id. */
export type PeriodicName = 'reconcile' | 'retention';

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
  for (const name of Object.keys(deps.every) as PeriodicName[]) {
    await queue.upsertJobScheduler(name, { every: deps.every[name] }, { name, opts: { attempts: 1, removeOnComplete: true, removeOnFail: { count: 100 } } });
  }
  const consumer = new QueueConsumer({
    queue,
    processor: async (job: Job) => {
      const name = job.name as PeriodicName;
      const run = deps.run[name];
      if (!run) return null;
      try {
        const result = await run();
        deps.onRun?.(name, 'ok');
        return result ?? null;
      } catch (error) {
        deps.onRun?.(name, 'failed');
        deps.logger.error({ job: name, err: (error as Error).message }, 'periodic run failed');
        throw error;
      }
    },
    // Two: a long retention sweep never holds back the reconciler of the same worker.
    worker: { connection: deps.connection, prefix, concurrency: 2 },
    logger: deps.logger,
    ...(deps.onRestart ? { onRestart: deps.onRestart } : {}),
  });
  return {
    queue,
    consumer,
    async close() {
      await consumer.close();
      await queue.close();
    },
  };
}
