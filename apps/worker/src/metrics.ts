import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Pool } from '@gatehook/db/client';
import { countParkedEvents } from '@gatehook/db/fanout-parking';
import { registerStatementMetric } from '@gatehook/db/metrics';
import type { DeliveryEngine, JobName } from '@gatehook/delivery';

export interface WorkerMetrics {
  registry: Registry;
  deliveries: Counter<'outcome'>;
  attempts: Histogram<'result'>;
  /** Where a delivery's latency goes: `ingest`, `fanout` and `send` (DeliveryStage). */
  stages: Histogram<'stage'>;
  reenqueued: Counter<'kind'>;
  fanoutFailures: Counter<'outcome'>;
  /** Runs of periodic work (reconcile, retention) this worker made, by outcome. */
  periodicRuns: Counter<'job' | 'outcome'>;
  /** Queue workers the watchdog recreated because they took no job while jobs waited. */
  queueWorkerRestarts: Counter<'queue'>;
  /** Redis errors of periodic work (watchdog looks, queue counts), never swallowed. */
  redisErrors: Counter<'where' | 'queue'>;
  /** OAuth 2.0 token requests of destinations (CONTRACT 20), by outcome (success, failure). */
  tokenFetches: Counter<'outcome'>;
  /** Reports the engine's queues and room (set once the engine exists: it reports its work here). */
  watch(engine: Pick<DeliveryEngine, 'queues' | 'room'>): void;
}

/**
 * Prometheus metrics of one worker process: outcomes, attempt latency, queue depth, the deliveries it holds and
 * the runs waiting for room, reconciler re-enqueues, fan-out failures and the events parked for an operator.
 */
export function createWorkerMetrics(pool: Pool): WorkerMetrics {
  const registry = new Registry();
  // The process's own: CPU, memory, event loop lag and GC, as the API reports them (`gatehook_api_*`).
  collectDefaultMetrics({ register: registry, prefix: 'gatehook_worker_' });
  let engine: Pick<DeliveryEngine, 'queues' | 'room'> | null = null;
  const deliveries = new Counter({
    name: 'gatehook_deliveries_total',
    help: 'Deliveries that reached a final status, by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const attempts = new Histogram({
    name: 'gatehook_attempt_duration_seconds',
    help: 'Duration of delivery attempts, by result class (2xx, 4xx, 5xx, error)',
    labelNames: ['result'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
    registers: [registry],
  });
  const stages = new Histogram({
    name: 'gatehook_delivery_stage_seconds',
    help: 'Time spent per stage of a delivery: ingest (accepted to fan-out started), fanout (fan-out started to first attempt started), send (attempt started to answer)',
    labelNames: ['stage'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const reenqueued = new Counter({
    name: 'gatehook_reconciler_reenqueued_total',
    help: 'Work the reconciler put back on the queues because Redis had lost it',
    labelNames: ['kind'],
    registers: [registry],
  });
  const periodicRuns = new Counter({
    name: 'gatehook_periodic_runs_total',
    help: 'Runs of periodic work (reconcile, retention) made by this worker, by outcome (ok, failed)',
    labelNames: ['job', 'outcome'],
    registers: [registry],
  });
  const queueWorkerRestarts = new Counter({
    name: 'gatehook_queue_worker_restarts_total',
    help: 'Queue workers recreated by the watchdog: jobs waited, the worker had room and took none',
    labelNames: ['queue'],
    registers: [registry],
  });
  const redisErrors = new Counter({
    name: 'gatehook_worker_redis_errors_total',
    help: 'Redis errors met by periodic work of this worker (watchdog, queue depth), by where',
    labelNames: ['where', 'queue'],
    registers: [registry],
  });
  const tokenFetches = new Counter({
    name: 'gatehook_oauth_token_fetches_total',
    help: 'OAuth 2.0 access tokens requested for destinations, by outcome (success, failure)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  new Gauge({
    name: 'gatehook_queue_jobs',
    help: 'Jobs per queue and state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      if (!engine) return;
      const { queues } = engine;
      for (const name of ['fanout', 'batch', 'deliver', 'task'] as JobName[]) {
        // Summed over the queue's shards.
        const counts = await queues.counts(name, 'waiting', 'active', 'delayed', 'failed').catch(() => {
          redisErrors.inc({ where: 'queue_depth', queue: name });
          return null;
        });
        if (!counts) continue;
        for (const [state, value] of Object.entries(counts)) this.set({ queue: name, state }, value);
      }
    },
  });
  const fanoutFailures = new Counter({
    name: 'gatehook_fanout_failures_total',
    help: 'Fan-out runs that failed on one event, by outcome: failed (run again by the reconciler) or parked',
    labelNames: ['outcome'],
    registers: [registry],
  });
  new Gauge({
    name: 'gatehook_fanout_parked_events',
    help: 'Events whose fan-out kept failing, parked until an operator releases them (docs/operations.md)',
    registers: [registry],
    async collect() {
      const parked = await countParkedEvents(pool).catch(() => null);
      if (parked !== null) this.set(parked);
    },
  });
  new Gauge({
    name: 'gatehook_worker_deliveries_in_progress',
    help: 'Deliveries this worker holds between lease and record (at most DELIVERY_CONCURRENCY + 200)',
    registers: [registry],
    collect() {
      if (engine) this.set(engine.room.inUse);
    },
  });
  new Gauge({
    name: 'gatehook_worker_runs_waiting',
    help: 'Runs of this worker (deliver jobs, fan-outs) waiting for room before their deliveries are leased',
    registers: [registry],
    collect() {
      if (engine) this.set(engine.room.waiting);
    },
  });
  registerStatementMetric(registry);
  return {
    registry,
    deliveries,
    attempts,
    stages,
    reenqueued,
    fanoutFailures,
    periodicRuns,
    queueWorkerRestarts,
    redisErrors,
    tokenFetches,
    watch(watched) {
      engine = watched;
    },
  };
}
