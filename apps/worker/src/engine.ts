import { closeRedis } from '@gatehook/core/service';
import { DelayedError, type Job } from 'bullmq';
import type { Config } from '@gatehook/core/config';
import { connectRedis, redisTarget } from '@gatehook/core/redis';
import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import { inSpan, withTraceparent } from '@gatehook/core/tracing';
import type { Db } from '@gatehook/db/client';
import { InvalidationBus, publishInvalidation } from '@gatehook/cache/invalidation';
import { sqlPool } from '@gatehook/db/client';
import { AttemptRunner, type AttemptDeps } from '@gatehook/delivery/attempt';
import { SendScheduler } from '@gatehook/delivery/flow/fair-share';
import { RenderPool } from '@gatehook/delivery/render/pool';
import { flushBatch } from '@gatehook/delivery/pipeline/batch-flush';
import { LocalDispatcher } from '@gatehook/delivery/pipeline/dispatch';
import type { EngineContext } from '@gatehook/delivery/context';
import { countsItsStart, fanOutGuarded } from '@gatehook/delivery/pipeline/fanout-guard';
import { DeliveryQueues, JOBS, queuePrefix, queueRoundTrip, SHARDED_QUEUES, tunables, waitingJobId, type JobName } from '@gatehook/delivery';
import { WEBHOOKS_TOPIC, WebhookConfigs } from '@gatehook/delivery/webhook-configs';
import { WebhookPace } from '@gatehook/delivery/flow/webhook-pace';
import { egressClientFromConfig } from '@gatehook/egress/from-config';
import { createWorkerMetrics, type WorkerMetrics } from './metrics';
import { QueueConsumer, startWatchdog, type Processor } from './consumers';
import { startPeriodic, type Periodic } from './periodic';
import { TASK_CONCURRENCY, taskProcessor } from './processors/tasks';
import { reconcileOnce, SharedOverdueSweep } from './reconciler';
import { sweepRetention } from './retention';
import { warnExpiringCertificates } from './certificate-expiry';

export interface EngineDeps {
  config: Config;
  db: Db;
  box: SecretBox;
  logger: Logger;
  /** Reconciler grace periods; the contract's 10 s / 30 s unless a test shortens them. */
  reconcilerGrace?: { eventsMs: number; deliveriesMs: number };
}

export interface Engine {
  queues: DeliveryQueues;
  metrics: WorkerMetrics;
  /** The consumers of every queue and shard (the periodic queue's included). */
  consumers(): readonly QueueConsumer[];
  periodic: Periodic;
  /** Readiness: a round trip through every queue this worker consumes (bounded by the caller). */
  roundTrip(): Promise<void>;
  /** This worker's webhook configuration cache (tests drop an organisation's entry once they wrote behind the API). */
  configs: WebhookConfigs;
  /** Stops taking jobs, lets in-flight jobs finish (or hands them back), then closes every connection. */
  close(): Promise<void>;
}

const RETENTION_INTERVAL_MS = 3_600_000;
/** Deliver jobs a worker takes at once per send slot; the room (Admission) bounds what they lease. */
const DELIVER_JOBS_PER_SLOT = 4;

/**
 * Fan-out and batch-flush jobs one worker takes at once. They spend their time waiting for the render pool, which
 * shares its threads fairly: enough of them run that one organisation's jobs waiting there never keep another
 * organisation's job from being taken. A waiting job costs little (its events and plan in memory).
 */
const RENDERING_JOB_CONCURRENCY = 32;

function resultClass(statusCode: number, error: string | null): string {
  if (statusCode === 0) return 'error';
  if (statusCode >= 200 && statusCode < 300 && !error) return '2xx';
  return `${Math.floor(statusCode / 100)}xx`;
}

/** Starts the delivery engine of one worker process: the queue workers, the reconciler and the retention sweep. */
export async function startEngine(deps: EngineDeps): Promise<Engine> {
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
  const queues = new DeliveryQueues(producer, prefix, { shards: config.DELIVERY_QUEUE_SHARDS });
  const pool = sqlPool(db);
  const metrics = createWorkerMetrics(queues, pool);
  const egress = egressClientFromConfig(config, { onTokenFetch: (outcome) => metrics.tokenFetches.inc({ outcome }) });

  const bus = new InvalidationBus(subscriber, prefix);
  const configs = new WebhookConfigs(db, box, { logger });
  await configs.follow(bus);
  const render = new RenderPool({
    encryptionKey: config.GATEHOOK_ENCRYPTION_KEY,
    threads: config.RENDER_THREADS,
    onError: (error) => logger.error({ err: error.message }, 'a render thread failed outside a task'),
  });
  await render.warm();
  const context: EngineContext = {
    db,
    pool,
    box,
    queues,
    configs,
    render,
    announce: (orgId) => publishInvalidation(producer, prefix, WEBHOOKS_TOPIC, [orgId]),
    batchLingerMs: config.BATCH_LINGER_MS,
    logger,
    onStage: (stage, seconds) => metrics.stages.observe({ stage }, seconds),
  };
  const attemptDeps: AttemptDeps = {
    ...context,
    send: (request) => egress.send(request),
    scheduler: new SendScheduler({
      slots: config.DELIVERY_CONCURRENCY,
      endpointMax: config.DELIVERY_ENDPOINT_CONCURRENCY,
      originMax: config.DELIVERY_ORIGIN_CONCURRENCY,
      recall: (deliveryIds) => {
        queues.recallWaiting(deliveryIds).catch((error: unknown) => logger.warn({ deliveries: deliveryIds.length, err: (error as Error).message }, 'could not recall waiting deliveries; they come back at their time'));
      },
    }),
    pace: new WebhookPace(producer, { prefix, logger }),
    retrySchedule: config.DELIVERY_RETRY_SCHEDULE,
    retryAfterCapSeconds: config.RETRY_AFTER_CAP_SECONDS,
    circuitBreakerSeconds: config.CIRCUIT_BREAKER_SECONDS,
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    onAttempt: ({ durationMs, statusCode, error }) => metrics.attempts.observe({ result: resultClass(statusCode, error) }, durationMs / 1000),
    onFinished: (outcome) => metrics.deliveries.inc({ outcome }),
    // Every request slot busy and one job's chunk more waiting for them: past that, work waits unleased.
    maxInProgress: config.DELIVERY_CONCURRENCY + tunables.DELIVER_CHUNK,
  };
  const runner = new AttemptRunner(attemptDeps);
  metrics.watchRoom(runner.admission);
  // Fresh deliveries start in the process that fanned them out (one chunk per delivery slot at most).
  const dispatcher = new LocalDispatcher(runner, queues, logger);
  context.local = dispatcher;

  const processors: Record<JobName, Processor> = {
    fanout: async (job: Job) => {
      const { orgId, eventIds, recovered, trace } = JOBS.fanout.parse(job.data);
      const result = await inSpan('gatehook.fanout', trace, { 'gatehook.org.id': orgId, 'gatehook.event.count': eventIds.length }, () => fanOutGuarded(context, orgId, eventIds, { counted: countsItsStart(job, recovered === true) }), (r) => ({ 'gatehook.delivery.count': r.deliveries }));
      for (const f of result.failed) metrics.fanoutFailures.inc({ outcome: f.parked ? 'parked' : 'failed' });
      return { events: result.events, deliveries: result.deliveries, failed: result.failed.length };
    },
    batch: async (job: Job) => {
      const { webhookId, orgId, trace } = JOBS.batch.parse(job.data);
      return inSpan('gatehook.batch.flush', trace, { 'gatehook.webhook.id': webhookId }, () => flushBatch(context, webhookId, orgId), (r) => ({ 'gatehook.delivery.count': r.deliveries }));
    },
    deliver: async (job: Job, token?: string) => {
      const { deliveryIds, orgId, trace } = JOBS.deliver.parse(job.data);
      const outcome = await withTraceparent(trace, () => runner.run(deliveryIds, orgId ?? ''));
      // Deliveries turned away by a full webhook come back when it can take them, holding no slot, each under its
      // one waiting job: this job, when it is that job (it moves back to the delayed set), else a job of its own.
      const own = outcome.busy.find((b) => job.id === waitingJobId(b.id));
      await withTraceparent(trace, () => queues.deliverLater(outcome.busy.filter((b) => b !== own).map((b) => ({ id: b.id, dueAt: b.retryAt })), orgId));
      if (own) {
        await job.moveToDelayed(own.retryAt.getTime(), token);
        throw new DelayedError();
      }
      return { sent: outcome.sent, skipped: outcome.skipped, cancelled: outcome.cancelled, busy: outcome.busy.length };
    },
    task: taskProcessor({
      ...context,
      pageSize: config.TASK_PAGE_SIZE,
      maxBacklog: config.TASK_MAX_BACKLOG,
      sendRate: config.TASK_SEND_RATE,
      leaseMs: config.TASK_LEASE_MS,
      onUnexpectedError: (taskId, error) => logger.error({ taskId, err: (error as Error).message }, 'task step failed'),
    }),
  };
  // Each shard gets the queue's whole concurrency: jobs taken wait for room (send slots, render threads) fairly by
  // organisation, so one organisation's jobs filling a shard's share would hold back another's job on that shard.
  const concurrency: Record<JobName, number> = {
    fanout: RENDERING_JOB_CONCURRENCY,
    batch: RENDERING_JOB_CONCURRENCY,
    // Jobs taken wait for room fairly by organisation (Admission), holding only their ids: taking several jobs per
    // slot keeps one organisation's backlog of jobs from keeping another's job in Redis.
    deliver: config.DELIVERY_CONCURRENCY * DELIVER_JOBS_PER_SLOT,
    task: TASK_CONCURRENCY,
  };
  const lockDuration: Partial<Record<JobName, number>> = {
    // The lock outlasts the request timeout, so a job is never considered stalled while its request runs.
    deliver: config.DELIVERY_TIMEOUT_MS + 5_000,
    task: config.TASK_LEASE_MS,
  };
  const onRestart = (queue: string) => metrics.queueWorkerRestarts.inc({ queue });
  const consumers: QueueConsumer[] = [];
  for (const name of Object.keys(processors) as JobName[]) {
    const shards = queues.shardsOf(name);
    for (const [shard, queue] of shards.entries()) {
      consumers.push(
        new QueueConsumer({
          queue,
          processor: processors[name],
          worker: {
            connection: workerConnection,
            prefix: queuePrefix(prefix, name, SHARDED_QUEUES.has(name) ? shard : undefined),
            concurrency: concurrency[name],
            ...(lockDuration[name] ? { lockDuration: lockDuration[name] } : {}),
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
  const retention = () => sweepRetention(db, config.DELIVERY_RETENTION_DAYS, logger, { width: config.HISTORY_PARTITION });
  // Partitions must exist ahead before the first hourly run: each worker runs the upkeep once as it starts (safe from
  // several workers at once); after that the scheduler runs it once an hour across all workers.
  void retention().then(
    () => metrics.periodicRuns.inc({ job: 'retention', outcome: 'ok' }),
    (error: unknown) => {
      metrics.periodicRuns.inc({ job: 'retention', outcome: 'failed' });
      logger.error({ job: 'retention', err: (error as Error).message }, 'start-up retention and partition upkeep failed');
    },
  );
  const periodic = await startPeriodic({
    connection: workerConnection,
    prefix,
    every: { reconcile: config.RECONCILE_INTERVAL_MS, retention: RETENTION_INTERVAL_MS },
    run: {
      reconcile: () => reconcileOnce(reconcilerDeps),
      // Retention and partition upkeep (creates partitions ahead, drops expired ones), then, on the same hourly beat,
      // the warning about client certificates that expire within 30 days (CONTRACT 18; once per certificate).
      retention: async () => {
        await retention();
        await warnExpiringCertificates(pool, logger);
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
    configs,
    consumers: allConsumers,
    periodic,
    roundTrip: () => queueRoundTrip(roundTripQueues),
    close() {
      closing ??= (async () => {
        await watchdog.stop();
        await Promise.allSettled([...consumers.map((c) => c.close()), periodic.close()]);
        await dispatcher.close();
        await render.close();
        await egress.close();
        await queues.close();
        await bus.close();
        await Promise.allSettled([closeRedis(producer), closeRedis(workerConnection)]);
      })();
      return closing;
    },
  };
}
