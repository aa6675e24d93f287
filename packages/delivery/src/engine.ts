import { InvalidationBus, publishInvalidation } from '@gatehook/cache/invalidation';
import type { Config } from '@gatehook/core/config';
import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import type { RedisConnection } from '@gatehook/core/redis';
import { inSpan, withTraceparent } from '@gatehook/core/tracing';
import { sqlPool, type Db } from '@gatehook/db/client';
import { egressClientFromConfig } from '@gatehook/egress/from-config';
import { AttemptRunner } from './attempt/runner';
import type { DeliveryStage, EngineContext } from './context';
import { Admission } from './flow/admission';
import { SendScheduler } from './flow/fair-share';
import { createFlowControl } from './flow/flow-control';
import { WebhookPace } from './flow/webhook-pace';
import type { AuditEventInput } from './audit-event-input';
import { ingestAuditEvents, type IngestResult } from './ingest';
import { flushBatch } from './pipeline/batch-flush';
import { LocalDispatcher } from './pipeline/dispatch';
import { countsItsStart, fanOutGuarded } from './pipeline/fanout-guard';
import { FanoutRounds } from './pipeline/fanout-rounds';
import { JOBS } from './queues/catalogue';
import { DeliveryQueues } from './queues/producer';
import { waitingJobId } from './queues/topology';
import { RenderPool } from './render/pool';
import { runTaskStep, type StepOutcome } from './tasks/step';
import { DELIVER_CHUNK } from './tunables';
import { WEBHOOKS_TOPIC, WebhookConfigs } from './webhook-configs';

/** What the engine runs on, made and closed by the app: clients, keys and the logger, nothing of the engine. */
export interface EngineInfrastructure {
  db: Db;
  box: SecretBox;
  logger: Logger;
  /** Commands and enqueues; it should fail fast when Redis is down (the reconciler covers what was not enqueued). */
  redis: RedisConnection;
  /** A connection of its own for the webhook configuration cache's invalidations (pub/sub); the engine closes it. */
  subscriber: RedisConnection;
  /** Hears what the engine does, for metrics; every hook is optional. */
  observer?: EngineObserver;
}

/** What the engine reports as it works. */
export interface EngineObserver {
  /** One attempt's answer (statusCode 0: none) and how long it took. */
  onAttempt?(info: { durationMs: number; statusCode: number; error: string | null }): void;
  /** A delivery reached a final status. */
  onFinished?(outcome: 'succeeded' | 'failed'): void;
  /** How long a delivery spent in one stage of its latency. */
  onStage?(stage: DeliveryStage, seconds: number): void;
  /** An OAuth 2.0 token request of a destination ended. */
  onTokenFetch?(outcome: 'success' | 'failure'): void;
  /** A fan-out run failed on one event: run again later, or parked for an operator. */
  onFanoutFailure?(outcome: 'failed' | 'parked'): void;
}

/** A job as a handler reads it (BullMQ's `Job` is one): its id, its data, and how often it was started and ended. */
export interface EngineJob {
  id?: string | undefined;
  data: unknown;
  attemptsStarted: number;
  attemptsMade: number;
}

/** What a deliver job did; `delayUntil`: the job is a delivery's waiting job, to move back to the delayed set until then. */
export interface DeliverResult {
  summary: { sent: number; skipped: number; cancelled: number; busy: number };
  delayUntil?: Date;
}

/** The work of each job of the catalogue (queues/catalogue.ts), job data parsed by its schema. */
export interface EngineHandlers {
  fanout(job: EngineJob): Promise<{ events: number; deliveries: number; failed: number }>;
  batch(job: EngineJob): Promise<{ deliveries: number }>;
  deliver(job: EngineJob): Promise<DeliverResult>;
  task(job: EngineJob): Promise<StepOutcome>;
}

/** The delivery engine of one process. */
export interface DeliveryEngine {
  /** The job catalogue's producer. */
  queues: DeliveryQueues;
  /** The webhook configuration cache (tests drop an organisation's entry once they wrote behind the API). */
  configs: WebhookConfigs;
  /** Deliveries held between lease and record, and runs waiting for room. */
  room: { readonly inUse: number; readonly waiting: number };
  handlers: EngineHandlers;
  /** Ingests audit events into the outbox (CONTRACT 6); their fan-out is enqueued. */
  ingest(orgId: string, events: readonly AuditEventInput[]): Promise<IngestResult>;
  /** Stops local runs and closes what the engine opened; safe to call twice. Stop the job consumers first. */
  close(): Promise<void>;
}

/**
 * Builds the delivery engine of one process, as Trigger.dev's RunEngine builds its systems: one infrastructure-only
 * context (EngineContext) shared by ingestion, fan-out, batching, attempts, flow control and tasks, each system built
 * here with what it needs from the others, never by importing them. The app wires the handlers to its queues.
 */
export async function createDeliveryEngine(
  config: Config,
  infrastructure: EngineInfrastructure,
): Promise<DeliveryEngine> {
  const { db, box, logger, redis, subscriber, observer = {} } = infrastructure;
  const prefix = config.REDIS_PREFIX;
  const queues = new DeliveryQueues(redis, prefix, { shards: config.DELIVERY_QUEUE_SHARDS });
  const pool = sqlPool(db);
  const egress = egressClientFromConfig(
    config,
    observer.onTokenFetch ? { onTokenFetch: (outcome) => observer.onTokenFetch!(outcome) } : {},
  );

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
    announce: (orgId) => publishInvalidation(redis, prefix, WEBHOOKS_TOPIC, [orgId]),
    batchLingerMs: config.BATCH_LINGER_MS,
    logger,
    ...(observer.onStage
      ? { onStage: (stage: DeliveryStage, seconds: number) => observer.onStage!(stage, seconds) }
      : {}),
  };

  const flow = createFlowControl({
    // Every request slot busy and one job's chunk more waiting for them: past that, work waits unleased.
    room: new Admission(config.DELIVERY_CONCURRENCY + DELIVER_CHUNK),
    slots: new SendScheduler({
      slots: config.DELIVERY_CONCURRENCY,
      endpointMax: config.DELIVERY_ENDPOINT_CONCURRENCY,
      originMax: config.DELIVERY_ORIGIN_CONCURRENCY,
      recall: (deliveryIds) => {
        queues
          .recallWaiting(deliveryIds)
          .catch((error: unknown) =>
            logger.warn(
              { deliveries: deliveryIds.length, err: (error as Error).message },
              'could not recall waiting deliveries; they come back at their time',
            ),
          );
      },
    }),
    pace: new WebhookPace(redis, { prefix, logger }),
  });
  const runner = new AttemptRunner({
    ...context,
    send: (request) => egress.send(request),
    flow,
    retrySchedule: config.DELIVERY_RETRY_SCHEDULE,
    retryAfterCapSeconds: config.RETRY_AFTER_CAP_SECONDS,
    circuitBreakerSeconds: config.CIRCUIT_BREAKER_SECONDS,
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    ...(observer.onAttempt ? { onAttempt: observer.onAttempt.bind(observer) } : {}),
    ...(observer.onFinished ? { onFinished: observer.onFinished.bind(observer) } : {}),
  });
  // Fresh deliveries start in the process that fanned them out (one chunk per delivery slot at most).
  const dispatcher = new LocalDispatcher(runner, queues, logger);
  context.local = dispatcher;
  const taskDeps = {
    ...context,
    pageSize: config.TASK_PAGE_SIZE,
    maxBacklog: config.TASK_MAX_BACKLOG,
    sendRate: config.TASK_SEND_RATE,
    leaseMs: config.TASK_LEASE_MS,
    onUnexpectedError: (taskId: string, error: unknown) =>
      logger.error({ taskId, err: (error as Error).message }, 'task step failed'),
  };

  // Small fan-out jobs of one organisation that queue up behind its running ones go together (fanout-rounds.ts).
  const rounds = new FanoutRounds(context);
  const handlers: EngineHandlers = {
    async fanout(job) {
      const { orgId, eventIds, recovered, trace } = JOBS.fanout.parse(job.data);
      const result = await inSpan(
        'gatehook.fanout',
        trace,
        { 'gatehook.org.id': orgId, 'gatehook.event.count': eventIds.length },
        () => fanOutGuarded(context, orgId, eventIds, { counted: countsItsStart(job, recovered === true), rounds }),
        (r) => ({ 'gatehook.delivery.count': r.deliveries }),
      );
      for (const f of result.failed) observer.onFanoutFailure?.(f.parked ? 'parked' : 'failed');
      return { events: result.events, deliveries: result.deliveries, failed: result.failed.length };
    },
    batch(job) {
      const { webhookId, orgId, trace } = JOBS.batch.parse(job.data);
      return inSpan(
        'gatehook.batch.flush',
        trace,
        { 'gatehook.webhook.id': webhookId },
        () => flushBatch(context, webhookId, orgId),
        (r) => ({ 'gatehook.delivery.count': r.deliveries }),
      );
    },
    async deliver(job) {
      const { deliveryIds, orgId, trace } = JOBS.deliver.parse(job.data);
      const outcome = await withTraceparent(trace, () => runner.run(deliveryIds, orgId));
      // Deliveries turned away by a full webhook come back when it can take them, holding no slot, each under its
      // one waiting job: this job, when it is that job (it moves back to the delayed set), else a job of its own.
      const own = outcome.busy.find((b) => job.id === waitingJobId(b.id));
      await withTraceparent(trace, () =>
        queues.deliverLater(
          outcome.busy.filter((b) => b !== own).map((b) => ({ id: b.id, dueAt: b.retryAt })),
          orgId,
        ),
      );
      const summary = {
        sent: outcome.sent,
        skipped: outcome.skipped,
        cancelled: outcome.cancelled,
        busy: outcome.busy.length,
      };
      return own ? { summary, delayUntil: own.retryAt } : { summary };
    },
    task(job) {
      return runTaskStep(taskDeps, JOBS.task.parse(job.data).taskId);
    },
  };

  let closing: Promise<void> | null = null;
  return {
    queues,
    configs,
    room: flow.room,
    handlers,
    ingest: (orgId, events) => ingestAuditEvents({ db, queues, logger }, orgId, events),
    close() {
      closing ??= (async () => {
        await dispatcher.close();
        await render.close();
        await egress.close();
        await queues.close();
        await bus.close();
      })();
      return closing;
    },
  };
}
