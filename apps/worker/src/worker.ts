import { closeRedis } from '@gatehook/core/service';
import type { Config } from '@gatehook/core/config';
import { connectRedis, redisTarget } from '@gatehook/core/redis';
import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import type { Db } from '@gatehook/db/client';
import { sqlPool } from '@gatehook/db/client';
import { analyzeGrownPartitions } from '@gatehook/db/partitions';
import {
  createDeliveryEngine,
  queuePrefix,
  queueRoundTrip,
  SHARDED_QUEUES,
  type DeliveryQueues,
  type JobName,
  type WebhookConfigs,
} from '@gatehook/delivery';
import { createWorkerMetrics, type WorkerMetrics } from './metrics';
import { QueueConsumer, startWatchdog } from './consumers';
import { startPeriodic, type Periodic } from './periodic';
import { batchJob } from './processors/batch';
import { deliverJob } from './processors/deliver';
import { fanoutJob } from './processors/fanout';
import { taskJob } from './processors/task';
import type { JobWiring } from './processors/wiring';
import { reconcileOnce, SharedOverdueSweep } from './reconciler';
import { sweepRetention, warnWithoutAutovacuum } from './retention';
import { warnExpiringCertificates } from './certificate-expiry';

export interface WorkerDeps {
  config: Config;
  db: Db;
  box: SecretBox;
  logger: Logger;
  /** Reconciler grace periods; the contract's 10 s / 30 s unless a test shortens them. */
  reconcilerGrace?: { eventsMs: number; deliveriesMs: number };
}

export interface Worker {
  queues: DeliveryQueues;
  metrics: WorkerMetrics;
  /** The consumers of every queue and shard (the periodic queue's included). */
  consumers(): readonly QueueConsumer[];
  periodic: Periodic;
  /** Readiness: a round trip through every queue this worker consumes (bounded by the caller). */
  roundTrip(): Promise<void>;
  /** The engine's webhook configuration cache (tests drop an organisation's entry once they wrote behind the API). */
  configs: WebhookConfigs;
  /** Stops taking jobs, lets in-flight jobs finish (or hands them back), then closes every connection. */
  close(): Promise<void>;
}

const RETENTION_INTERVAL_MS = 3_600_000;
/** How often the young partitions' statistics are looked at (`analyzeGrownPartitions`). */
const STATISTICS_INTERVAL_MS = 1_000;

function resultClass(statusCode: number, error: string | null): string {
  if (statusCode === 0) return 'error';
  if (statusCode >= 200 && statusCode < 300 && !error) return '2xx';
  return `${Math.floor(statusCode / 100)}xx`;
}

/**
 * Starts one worker process around the delivery engine: its queue consumers (one processor per job, ./processors),
 * the reconciler and the retention sweep as periodic work, the watchdog and the metrics.
 */
export async function startWorker(deps: WorkerDeps): Promise<Worker> {
  const { config, db, box, logger } = deps;
  const prefix = config.REDIS_PREFIX;
  const target = redisTarget(config);
  // Producers fail fast when Redis is down (the reconciler covers what they could not enqueue); workers wait.
  const producer = connectRedis(target, { maxRetriesPerRequest: 1, enableOfflineQueue: true });
  const workerConnection = connectRedis(target, { maxRetriesPerRequest: null });
  const subscriber = connectRedis(target, { maxRetriesPerRequest: null });
  for (const connection of [producer, workerConnection, subscriber]) {
    connection.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis connection error'));
  }
  const pool = sqlPool(db);
  const metrics = createWorkerMetrics(pool);
  const engine = await createDeliveryEngine(config, {
    db,
    box,
    logger,
    redis: producer,
    subscriber,
    observer: {
      onAttempt: ({ durationMs, statusCode, error }) =>
        metrics.attempts.observe({ result: resultClass(statusCode, error) }, durationMs / 1000),
      onFinished: (outcome) => metrics.deliveries.inc({ outcome }),
      onStage: (stage, seconds) => metrics.stages.observe({ stage }, seconds),
      onTokenFetch: (outcome) => metrics.tokenFetches.inc({ outcome }),
      onFanoutFailure: (outcome) => metrics.fanoutFailures.inc({ outcome }),
    },
  });
  const { queues } = engine;
  metrics.watch(engine);

  // Each shard gets the queue's whole concurrency: jobs taken wait for room (send slots, render threads) fairly by
  // organisation, so one organisation's jobs filling a shard's share would hold back another's job on that shard.
  const jobs: Record<JobName, JobWiring> = {
    fanout: fanoutJob(engine),
    batch: batchJob(engine),
    deliver: deliverJob(engine, config),
    task: taskJob(engine, config),
  };
  const onRestart = (queue: string) => metrics.queueWorkerRestarts.inc({ queue });
  const consumers: QueueConsumer[] = [];
  for (const name of Object.keys(jobs) as JobName[]) {
    const { processor, concurrency, lockDuration } = jobs[name];
    for (const [shard, queue] of queues.shardsOf(name).entries()) {
      consumers.push(
        new QueueConsumer({
          queue,
          processor,
          worker: {
            connection: workerConnection,
            prefix: queuePrefix(prefix, name, SHARDED_QUEUES.has(name) ? shard : undefined),
            concurrency,
            ...(lockDuration ? { lockDuration } : {}),
          },
          logger,
          onRestart,
        }),
      );
    }
  }

  // Reconciler and retention: once per interval across all workers, as job schedulers (./periodic.ts).
  const reconcilerDeps = {
    db,
    queues,
    intervalMs: config.RECONCILE_INTERVAL_MS,
    batchLingerMs: config.BATCH_LINGER_MS,
    logger,
    onReenqueued: (kind: 'events' | 'deliveries' | 'batches', count: number) => metrics.reenqueued.inc({ kind }, count),
    sweep: new SharedOverdueSweep(producer, prefix),
    ...(deps.reconcilerGrace ? { grace: deps.reconcilerGrace } : {}),
  };
  const retention = () =>
    sweepRetention(db, config.DELIVERY_RETENTION_DAYS, logger, { width: config.HISTORY_PARTITION });
  void warnWithoutAutovacuum(db, logger).catch((error: unknown) =>
    logger.warn({ err: (error as Error).message }, 'could not read the autovacuum settings'),
  );
  // Partitions must exist ahead before the first hourly run: each worker runs the upkeep once as it starts (safe from
  // several workers at once); after that the scheduler runs it once an hour across all workers.
  void retention().then(
    () => metrics.periodicRuns.inc({ job: 'retention', outcome: 'ok' }),
    (error: unknown) => {
      metrics.periodicRuns.inc({ job: 'retention', outcome: 'failed' });
      logger.error(
        { job: 'retention', err: (error as Error).message },
        'start-up retention and partition upkeep failed',
      );
    },
  );
  const periodic = await startPeriodic({
    connection: workerConnection,
    prefix,
    every: {
      reconcile: config.RECONCILE_INTERVAL_MS,
      retention: RETENTION_INTERVAL_MS,
      statistics: STATISTICS_INTERVAL_MS,
    },
    run: {
      reconcile: () => reconcileOnce(reconcilerDeps),
      // Retention and partition upkeep (creates partitions ahead, drops expired ones), then, on the same hourly beat,
      // the warning about client certificates that expire within 30 days (CONTRACT 18; once per certificate).
      retention: async () => {
        await retention();
        await warnExpiringCertificates(pool, logger);
      },
      // Statistics of partitions that grew since the planner last heard of them (docs/database.md, "Statistics of
      // young partitions"): every second, so that a new day's partition is analysed a second or two after its first
      // rows.
      statistics: async () => {
        const analysed = await analyzeGrownPartitions(pool);
        if (analysed.length) logger.info({ analysed }, 'partition statistics refreshed');
      },
    },
    logger,
    onRun: (job, outcome) => metrics.periodicRuns.inc({ job, outcome }),
    onRescheduled: (job) => metrics.periodicRuns.inc({ job, outcome: 'rescheduled' }),
    onError: () => metrics.redisErrors.inc({ where: 'periodic', queue: 'periodic' }),
    onRestart,
  });
  const allConsumers = () => [...consumers, periodic.consumer];
  const watchdog = startWatchdog(allConsumers, {
    stuckAfterMs: config.QUEUE_WATCHDOG_MS,
    logger,
    onError: (queue) => metrics.redisErrors.inc({ where: 'watchdog', queue }),
  });
  const roundTripQueues = [...queues.all(), periodic.queue];

  let closing: Promise<void> | null = null;
  return {
    queues,
    metrics,
    configs: engine.configs,
    consumers: allConsumers,
    periodic,
    roundTrip: () => queueRoundTrip(roundTripQueues),
    close() {
      closing ??= (async () => {
        await watchdog.stop();
        await Promise.allSettled([...consumers.map((c) => c.close()), periodic.close()]);
        await engine.close();
        await Promise.allSettled([closeRedis(producer), closeRedis(workerConnection)]);
      })();
      return closing;
    },
  };
}
