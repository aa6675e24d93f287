import { Queue } from 'bullmq';
import type { Logger } from '@gatehook/core/logger';
import type { RedisConnection } from '@gatehook/core/redis';
import type { JobName } from '@gatehook/delivery/jobs';
import { QueueConsumer, type Processor } from './consumers';

/** How often the old queues are looked at. */
const CHECK_EVERY_MS = 10_000;

export interface LegacyDrainDeps {
  connection: RedisConnection;
  /** REDIS_PREFIX: the old queues are `<prefix>:fanout`, `<prefix>:batch`, `<prefix>:deliver`, `<prefix>:task`. */
  prefix: string;
  processors: Record<JobName, Processor>;
  logger: Logger;
  checkEveryMs?: number;
}

export interface LegacyDrain {
  /** Jobs left in the old queues at the last look, by queue. */
  readonly left: ReadonlyMap<JobName, number>;
  /** One look now (tests); the drain looks every 10 s on its own. */
  check(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The rolling upgrade from the unsharded, untagged queues (`<prefix>:deliver`, ...) of earlier versions: while any of
 * them holds jobs (older APIs and workers still running add to them, and their delayed retries come due for hours),
 * a worker of this version consumes it with the same processors, and stops once it is empty. The look is one
 * count per old queue every 10 s. Only on a single Redis: on a cluster the old queues never worked (their keys
 * span slots), so there is nothing to drain. Postgres stays the source of truth: a job the drain never took is
 * re-enqueued by the reconciler once it is overdue.
 */
export function startLegacyDrain(deps: LegacyDrainDeps): LegacyDrain {
  const names = Object.keys(deps.processors) as JobName[];
  const queues = new Map(names.map((name) => [name, new Queue(name, { connection: deps.connection, prefix: deps.prefix })]));
  const consumers = new Map<JobName, QueueConsumer>();
  const left = new Map<JobName, number>();
  let closed = false;

  const checkOne = async (name: JobName) => {
    const queue = queues.get(name)!;
    const counts = await queue.getJobCounts('wait', 'prioritized', 'delayed', 'active', 'waiting-children');
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    left.set(name, total);
    const consumer = consumers.get(name);
    if (total > 0 && !consumer && !closed) {
      deps.logger.info({ queue: `${deps.prefix}:${name}`, jobs: total }, 'draining a queue of an earlier version');
      consumers.set(name, new QueueConsumer({ queue, processor: deps.processors[name], worker: { connection: deps.connection, prefix: deps.prefix, concurrency: 4 }, logger: deps.logger }));
    } else if (total === 0 && consumer) {
      consumers.delete(name);
      await consumer.close();
      deps.logger.info({ queue: `${deps.prefix}:${name}` }, 'queue of an earlier version drained');
    }
  };
  let running: Promise<void> | null = null;
  const check = () =>
    (running ??= (async () => {
      for (const name of names) {
        await checkOne(name).catch((error: unknown) => deps.logger.warn({ queue: `${deps.prefix}:${name}`, err: (error as Error).message }, 'could not look at a queue of an earlier version'));
      }
    })().finally(() => (running = null)));
  const timer = setInterval(() => void check(), deps.checkEveryMs ?? CHECK_EVERY_MS);
  timer.unref();
  void check();
  return {
    left,
    check,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await running;
      await Promise.allSettled([...consumers.values()].map((c) => c.close()));
      await Promise.allSettled([...queues.values()].map((q) => q.close()));
    },
  };
}
