import { createHash } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { within } from '@gatehook/core/readiness';
import { GroupCommit } from '@gatehook/db/group-commit';

/** Longest a merged fan-out enqueue may take before its events are left to the reconciler. */
const ENQUEUE_TIMEOUT_MS = 2_000;
/**
 * Least time between two merged fan-out enqueues of a process: under a steady stream of ingest flushes each job
 * carries what arrived meanwhile, so the worker handles fewer, larger jobs (bench/HISTORY.md has the figures); an
 * event after a quiet spell is enqueued at once, so the most it adds is this, to fan-out only, never to the 202.
 */
const FANOUT_MERGE_MS = 10;

/** Most deliveries one deliver job carries. */
export const DELIVER_CHUNK = 200;

/**
 * BullMQ priority of the deliver jobs of recover and replay tasks. Jobs without a priority (live fan-out's,
 * retries, deliveries waiting for their origin) are taken first, so a task's sends wait while live work waits.
 */
export const TASK_DELIVER_PRIORITY = 100;

/**
 * The job catalogue: every queue with the schema of its job data. Producers (API, worker, reconciler) and
 * processors (worker) both go through it. Postgres is the source of truth: a job only says "look at this",
 * so a lost or duplicated job never loses or duplicates a delivery.
 */
export const JOBS = {
  /** Fan out committed audit events to the matching webhooks of their organisation. */
  fanout: z.object({
    orgId: z.uuid(),
    eventIds: z.array(z.uuid()).min(1).max(1000),
    /** A reconciler copy: its run counts its start on each event (packages/delivery/src/fanout-parking.ts). */
    recovered: z.literal(true).optional(),
  }),
  /** Turn a webhook's buffered batch items into deliveries (full batches, or those older than the linger). */
  batch: z.object({ webhookId: z.uuid(), orgId: z.uuid().optional() }),
  /**
   * Make the next attempt of deliveries: a chunk of fresh deliveries of one fan-out (one lease statement for all),
   * or one delivery whose retry is due (retries stay individual jittered delayed jobs).
   */
  deliver: z.object({
    deliveryIds: z.array(z.uuid()).min(1).max(DELIVER_CHUNK),
    /** The organisation of the deliveries: the worker's room is shared fairly by it (absent in older jobs). */
    orgId: z.uuid().optional(),
  }),
  /** Take the next step (one page) of a recover or replay task (CONTRACT 11; packages/delivery/src/tasks.ts). */
  task: z.object({ taskId: z.uuid() }),
} as const;

export type JobName = keyof typeof JOBS;
export type JobData<N extends JobName> = z.output<(typeof JOBS)[N]>;

const defaultJobOptions: JobsOptions = {
  // Processor crashes (a database hiccup) are retried by BullMQ; the state machine's own retries are delays.
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: { count: 1000 },
};

/**
 * Deterministic deduplication id for a list of event ids, so a reconciler pass does not stack copies of a job
 * still waiting, delayed or running. Not a job id: a job that failed for good (every attempt while Postgres was
 * down) stays in Redis under its id, and a copy with that id would be ignored, leaving the events never fanned out.
 */
function listId(prefix: string, ids: readonly string[]): string {
  return `${prefix}.${createHash('sha256').update(ids.join(',')).digest('hex').slice(0, 24)}`;
}

// The delivery and its due time: one job per attempt.
function deliverJobId(deliveryId: string, dueAt: Date): string {
  return `d.${deliveryId}.${dueAt.getTime()}`;
}

/**
 * The one job id of a delivery waiting for its turn (turned away by a full origin, or put back by the reconciler):
 * a delivery never has two such jobs, however many times it is turned away or reconciled.
 */
export function waitingJobId(deliveryId: string): string {
  return `d.${deliveryId}.wait`;
}

/** A deliver job's data: the deliveries, and their organisation when the producer knows it. */
function deliverData(deliveryIds: string[], orgId: string | undefined): JobData<'deliver'> {
  return orgId ? { deliveryIds, orgId } : { deliveryIds };
}

/** An audit event committed to the outbox, to be fanned out. */
export interface CommittedEvent {
  orgId: string;
  id: string;
}

/** Fan-out jobs for committed events, in chunks of at most 1000 ids (or `chunk`); see {@link DeliveryQueues.fanout}. */
function fanoutJobs(orgId: string, eventIds: readonly string[], opts: { recovered?: boolean; chunk?: number } = {}) {
  const size = Math.min(Math.max(1, opts.chunk ?? 1000), 1000);
  const jobs = [];
  for (let i = 0; i < eventIds.length; i += size) {
    const chunk = eventIds.slice(i, i + size);
    const data: JobData<'fanout'> = opts.recovered ? { orgId, eventIds: chunk, recovered: true } : { orgId, eventIds: chunk };
    jobs.push({ name: 'fanout', data, opts: opts.recovered ? { deduplication: { id: listId('f', chunk) } } : {} });
  }
  return jobs;
}

/** Producer side of the catalogue. One instance per process; `close()` is safe to call twice. */
export class DeliveryQueues {
  private readonly queues: { [N in JobName]: Queue };
  private closed = false;
  /** Fan-out enqueues of concurrent callers, merged: one addBulk in flight, the next gathering meanwhile ({@link fanoutMerged}). */
  private readonly merged = new GroupCommit<readonly CommittedEvent[], void>((items) => this.enqueueMerged(items), {
    maxBatch: 1000,
    maxConcurrent: 1,
    minIntervalMs: FANOUT_MERGE_MS,
  });
  private readonly mergedInFlight = new Set<Promise<void>>();

  constructor(connection: Redis, prefix: string) {
    const make = (name: JobName) => new Queue(name, { connection, prefix, defaultJobOptions });
    this.queues = { fanout: make('fanout'), batch: make('batch'), deliver: make('deliver'), task: make('task') };
  }

  /** The underlying queues, for metrics and tests. */
  queue(name: JobName): Queue {
    return this.queues[name];
  }

  /**
   * Enqueues fan-out of committed events, in chunks of at most 1000 ids (or `chunk`). A `recovered` copy (the
   * reconciler's) is deduplicated against a copy of the same chunk still waiting or running, and counts its start.
   */
  async fanout(orgId: string, eventIds: readonly string[], opts: { recovered?: boolean; chunk?: number } = {}): Promise<void> {
    const jobs = fanoutJobs(orgId, eventIds, opts);
    if (jobs.length > 0) await this.queues.fanout.addBulk(jobs);
  }

  /**
   * Enqueues fan-out of committed events together with the events of concurrent callers (ingestion's flushes):
   * while one addBulk is in flight, and for FANOUT_MERGE_MS after the previous one started, the next gathers every
   * call made meanwhile, so under load a job carries more events and Redis and the worker see fewer jobs. Rejects
   * when Redis has not taken the jobs within ENQUEUE_TIMEOUT_MS; the events are committed, and the reconciler fans
   * them out. {@link close} waits for the enqueues in flight.
   */
  fanoutMerged(events: readonly CommittedEvent[]): Promise<void> {
    const queued = this.merged.submit(events);
    const tracked = queued.catch(() => undefined).finally(() => this.mergedInFlight.delete(tracked));
    this.mergedInFlight.add(tracked);
    return queued;
  }

  private async enqueueMerged(items: (readonly CommittedEvent[])[]): Promise<void[]> {
    const byOrg = new Map<string, string[]>();
    for (const { orgId, id } of items.flat()) {
      const ids = byOrg.get(orgId);
      if (ids) ids.push(id);
      else byOrg.set(orgId, [id]);
    }
    const jobs = [...byOrg].flatMap(([orgId, ids]) => fanoutJobs(orgId, ids));
    await within(this.queues.fanout.addBulk(jobs), ENQUEUE_TIMEOUT_MS);
    return items.map(() => undefined);
  }

  /**
   * Schedules a batch flush for a webhook. Flushes are idempotent (items are claimed with row locks), so
   * duplicates only cost a query; the id limits them to one per webhook per `bucket`.
   */
  async flushBatch(webhookId: string, delayMs: number, bucket: string | number, orgId?: string): Promise<void> {
    const data: JobData<'batch'> = orgId ? { webhookId, orgId } : { webhookId };
    await this.queues.batch.add('batch', data, { jobId: `b.${webhookId}.${bucket}`, delay: Math.max(0, delayMs) });
  }

  /**
   * Schedules an attempt of a delivery at `dueAt`. The id names the delivery and its due time, so the same
   * attempt is never queued twice, while a new due time (next retry, manual retry) gets its own job.
   */
  async deliver(deliveryId: string, dueAt: Date, orgId?: string): Promise<void> {
    const data = deliverData([deliveryId], orgId);
    await this.queues.deliver.add('deliver', data, {
      jobId: deliverJobId(deliveryId, dueAt),
      delay: Math.max(0, dueAt.getTime() - Date.now()),
    });
  }

  /**
   * Schedules deliveries waiting for their turn (turned away by a full origin; reconciled) under each one's
   * {@link waitingJobId}: while that job waits, is delayed or runs, another is not added, so a delivery waiting on a
   * busy origin has one job whatever the reconciler does. The waiting job itself, turned away again, moves back to
   * the delayed set (apps/worker/src/engine.ts). Failed for good, it is removed: it never blocks the next copy.
   */
  async deliverLater(deliveries: readonly { id: string; dueAt: Date; orgId?: string }[], orgId?: string): Promise<void> {
    if (deliveries.length === 0) return;
    await this.queues.deliver.addBulk(
      deliveries.map((d) => ({
        name: 'deliver',
        data: deliverData([d.id], d.orgId ?? orgId),
        opts: { jobId: waitingJobId(d.id), delay: Math.max(0, d.dueAt.getTime() - Date.now()), removeOnFail: true },
      })),
    );
  }

  /** Schedules the first attempts of fresh deliveries, due now, in chunks: one job (and one lease) per chunk. */
  async deliverNow(deliveryIds: readonly string[], orgId?: string): Promise<void> {
    const jobs = [];
    for (let i = 0; i < deliveryIds.length; i += DELIVER_CHUNK) {
      const data = deliverData(deliveryIds.slice(i, i + DELIVER_CHUNK), orgId);
      jobs.push({ name: 'deliver', data });
    }
    if (jobs.length > 0) await this.queues.deliver.addBulk(jobs);
  }

  /**
   * Schedules a recover or replay task's deliveries at their send slots: one job (and one lease) per slot, delayed
   * until it, behind live jobs ({@link TASK_DELIVER_PRIORITY}).
   */
  async deliverScheduled(slots: readonly { ids: readonly string[]; dueAt: Date }[], orgId?: string): Promise<void> {
    const now = Date.now();
    const jobs = [];
    for (const slot of slots) {
      const opts: JobsOptions = { delay: Math.max(0, slot.dueAt.getTime() - now), priority: TASK_DELIVER_PRIORITY };
      for (let i = 0; i < slot.ids.length; i += DELIVER_CHUNK) {
        const data = deliverData(slot.ids.slice(i, i + DELIVER_CHUNK), orgId);
        jobs.push({ name: 'deliver', data, opts });
      }
    }
    if (jobs.length > 0) await this.queues.deliver.addBulk(jobs);
  }

  /**
   * Schedules the next step of a task at `dueAt`. The id names the task and the due time (plus a reconciler round),
   * so a step is queued once; the task's lease in Postgres keeps two copies from running it twice anyway.
   */
  async taskStep(taskId: string, dueAt: Date, key?: string): Promise<void> {
    const data: JobData<'task'> = { taskId };
    await this.queues.task.add('task', data, {
      jobId: `t.${taskId}.${dueAt.getTime()}${key ? `.${key}` : ''}`,
      delay: Math.max(0, dueAt.getTime() - Date.now()),
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.mergedInFlight]);
    await Promise.allSettled(Object.values(this.queues).map((q) => q.close()));
  }
}
