import { createHash } from 'node:crypto';
import { Queue, type JobsOptions, type JobType } from 'bullmq';
import { within } from '@gatehook/core/readiness';
import type { RedisConnection } from '@gatehook/core/redis';
import { currentTraceparent } from '@gatehook/core/tracing';
import { GroupCommit } from '@gatehook/core/group-commit';
import {
  DEFAULT_QUEUE_SHARDS,
  DELIVER_CHUNK,
  ENQUEUE_TIMEOUT_MS,
  FANOUT_MERGE_MS,
  LATER_BATCH,
  TASK_DELIVER_PRIORITY,
} from '../tunables';
import type { JobData, JobName } from './catalogue';
import { queuePrefix, queueRoundTrip, shardOf, SHARDED_QUEUES, waitingJobId } from './topology';

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

/** A deliver job's data: the deliveries and their organisation. */
function deliverData(deliveryIds: string[], orgId: string, traceparent: string | undefined): JobData<'deliver'> {
  return withTrace<JobData<'deliver'>>({ deliveryIds, orgId }, traceparent);
}

/** A delivery to come back at `dueAt` under its waiting job ({@link DeliveryQueues.deliverLater}). */
export interface WaitingDelivery {
  id: string;
  dueAt: Date;
  orgId?: string | undefined;
}

/** A waiting delivery as queued for the merged enqueue: its organisation and its caller's trace, taken at the call. */
type QueuedWaiting = WaitingDelivery & { orgId: string; trace: string | undefined };

/** Job data with the trace it continues, when there is one. */
function withTrace<D extends { trace?: string | undefined }>(data: D, traceparent: string | undefined): D {
  if (traceparent !== undefined) data.trace = traceparent;
  return data;
}

/** An audit event committed to the outbox, to be fanned out. */
export interface CommittedEvent {
  orgId: string;
  id: string;
  /** The traceparent of the ingestion span (tracing on). */
  trace?: string | undefined;
}

type BulkJob = { name: string; data: unknown; opts?: JobsOptions };

/** Fan-out jobs for committed events, in chunks of at most 1000 ids (or `chunk`); see {@link DeliveryQueues.fanout}. */
function fanoutJobs(
  orgId: string,
  eventIds: readonly string[],
  opts: { recovered?: boolean; chunk?: number; trace?: string | undefined } = {},
): (BulkJob & { key: string })[] {
  const size = Math.min(Math.max(1, opts.chunk ?? 1000), 1000);
  const jobs = [];
  for (let i = 0; i < eventIds.length; i += size) {
    const chunk = eventIds.slice(i, i + size);
    const data = withTrace<JobData<'fanout'>>(
      opts.recovered ? { orgId, eventIds: chunk, recovered: true } : { orgId, eventIds: chunk },
      opts.trace,
    );
    // The shard follows the chunk's first event: a reconciler copy of a chunk meets its deduplication id there.
    jobs.push({
      name: 'fanout',
      data,
      opts: opts.recovered ? { deduplication: { id: listId('f', chunk) } } : {},
      key: chunk[0]!,
    });
  }
  return jobs;
}

/**
 * Producer side of the catalogue. One instance per process; `close()` is safe to call twice. Fan-out and deliver
 * jobs go to one of `shards` queues each (by the job's first event or delivery id, see {@link shardOf}); the
 * worker consumes every shard.
 */
export class DeliveryQueues {
  private readonly queues: { [N in JobName]: Queue[] };
  readonly shards: number;
  private closed = false;
  /** Fan-out enqueues of concurrent callers, merged: one addBulk in flight, the next gathering meanwhile ({@link fanoutMerged}). */
  private readonly merged = GroupCommit.withoutResults(
    (items: (readonly CommittedEvent[])[]) => this.enqueueMerged(items),
    {
      maxBatch: 1000,
      maxConcurrent: 1,
      minIntervalMs: FANOUT_MERGE_MS,
    },
  );
  private readonly mergedInFlight = new Set<Promise<void>>();
  /**
   * Waiting jobs of concurrent callers ({@link deliverLater}), merged while an enqueue is in flight: the runs that a
   * full webhook's first-answer window ends at once each turn deliveries away, and each enqueued its own.
   */
  private readonly later = GroupCommit.withoutResults(
    (items: (readonly QueuedWaiting[])[]) => this.enqueueLater(items.flat()),
    { maxBatch: LATER_BATCH, maxConcurrent: 2 },
  );

  constructor(
    connection: RedisConnection,
    /** REDIS_PREFIX. */
    readonly prefix: string,
    options: { shards?: number } = {},
  ) {
    this.shards = options.shards ?? DEFAULT_QUEUE_SHARDS;
    const make = (name: JobName) =>
      SHARDED_QUEUES.has(name)
        ? Array.from(
            { length: this.shards },
            (_, shard) => new Queue(name, { connection, prefix: queuePrefix(prefix, name, shard), defaultJobOptions }),
          )
        : [new Queue(name, { connection, prefix: queuePrefix(prefix, name), defaultJobOptions })];
    this.queues = { fanout: make('fanout'), batch: make('batch'), deliver: make('deliver'), task: make('task') };
  }

  /** Every queue of a name: its shards, or the one queue. */
  shardsOf(name: JobName): readonly Queue[] {
    return this.queues[name];
  }

  /** Every queue of the catalogue. */
  all(): Queue[] {
    return Object.values(this.queues).flat();
  }

  /** Job counts of a name over all its shards. */
  async counts(name: JobName, ...states: JobType[]): Promise<Record<string, number>> {
    const all = await Promise.all(this.queues[name].map((q) => q.getJobCounts(...states)));
    const sum: Record<string, number> = {};
    for (const counts of all) for (const [state, n] of Object.entries(counts)) sum[state] = (sum[state] ?? 0) + n;
    return sum;
  }

  /** Readiness: a round trip through every queue ({@link queueRoundTrip}). */
  roundTrip(): Promise<void> {
    return queueRoundTrip(this.all());
  }

  private queueFor(name: JobName, key: string): Queue {
    const queues = this.queues[name];
    return queues.length === 1 ? queues[0]! : queues[shardOf(key, queues.length)]!;
  }

  /** Adds jobs each to the shard of its key, one addBulk per shard. */
  private async addSharded(name: JobName, jobs: readonly (BulkJob & { key: string })[]): Promise<void> {
    const byQueue = new Map<Queue, BulkJob[]>();
    for (const { key, ...job } of jobs) {
      const queue = this.queueFor(name, key);
      const list = byQueue.get(queue);
      if (list) list.push(job);
      else byQueue.set(queue, [job]);
    }
    await Promise.all([...byQueue].map(([queue, list]) => queue.addBulk(list)));
  }

  /**
   * Enqueues fan-out of committed events, in chunks of at most 1000 ids (or `chunk`). A `recovered` copy (the
   * reconciler's) is deduplicated against a copy of the same chunk still waiting or running, and counts its start.
   */
  async fanout(
    orgId: string,
    eventIds: readonly string[],
    opts: { recovered?: boolean; chunk?: number } = {},
  ): Promise<void> {
    const jobs = fanoutJobs(orgId, eventIds, opts);
    if (jobs.length > 0) await this.addSharded('fanout', jobs);
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

  private async enqueueMerged(items: (readonly CommittedEvent[])[]): Promise<void> {
    // One job per organisation and trace: a traced request's events are fanned out in a span of their own trace.
    const byOrg = new Map<string, { orgId: string; trace: string | undefined; ids: string[] }>();
    for (const { orgId, id, trace } of items.flat()) {
      const key = trace === undefined ? orgId : `${orgId} ${trace}`;
      const group = byOrg.get(key);
      if (group) group.ids.push(id);
      else byOrg.set(key, { orgId, trace, ids: [id] });
    }
    const jobs = [...byOrg.values()].flatMap(({ orgId, trace, ids }) => fanoutJobs(orgId, ids, { trace }));
    await within(this.addSharded('fanout', jobs), ENQUEUE_TIMEOUT_MS);
  }

  /**
   * Schedules a batch flush for a webhook. Flushes are idempotent (items are claimed with row locks), so
   * duplicates only cost a query; the id limits them to one per webhook per `bucket`.
   */
  async flushBatch(webhookId: string, delayMs: number, bucket: string | number, orgId?: string): Promise<void> {
    const data = withTrace<JobData<'batch'>>(orgId ? { webhookId, orgId } : { webhookId }, currentTraceparent());
    await this.queueFor('batch', webhookId).add('batch', data, {
      jobId: `b.${webhookId}.${bucket}`,
      delay: Math.max(0, delayMs),
    });
  }

  /**
   * Schedules an attempt of a delivery at `dueAt`. The id names the delivery and its due time, so the same
   * attempt is never queued twice, while a new due time (next retry, manual retry) gets its own job.
   */
  async deliver(deliveryId: string, dueAt: Date, orgId: string): Promise<void> {
    const data = deliverData([deliveryId], orgId, currentTraceparent());
    await this.queueFor('deliver', deliveryId).add('deliver', data, {
      jobId: deliverJobId(deliveryId, dueAt),
      delay: Math.max(0, dueAt.getTime() - Date.now()),
    });
  }

  /**
   * Schedules deliveries waiting for their turn (turned away by a full origin; reconciled) under each one's
   * {@link waitingJobId}: while that job waits, is delayed or runs, another is not added, so a delivery waiting on a
   * busy origin has one job whatever the reconciler does. The waiting job itself, turned away again, moves back to
   * the delayed set (the worker's deliver processor). Failed for good, it is removed: it never blocks the next copy.
   */
  async deliverLater(deliveries: readonly WaitingDelivery[], orgId?: string): Promise<void> {
    if (deliveries.length === 0) return;
    // The trace is the caller's, taken now: the merged enqueue runs in whichever caller's context started it.
    const trace = currentTraceparent();
    await this.later.submit(
      deliveries.map((d) => {
        const owner = d.orgId ?? orgId;
        if (owner === undefined) throw new Error(`deliverLater: delivery ${d.id} has no organisation`);
        return { ...d, orgId: owner, trace };
      }),
    );
  }

  private async enqueueLater(deliveries: readonly QueuedWaiting[]): Promise<void> {
    await this.addSharded(
      'deliver',
      deliveries.map((d) => ({
        name: 'deliver',
        data: deliverData([d.id], d.orgId, d.trace),
        opts: { jobId: waitingJobId(d.id), delay: Math.max(0, d.dueAt.getTime() - Date.now()), removeOnFail: true },
        key: d.id,
      })),
    );
  }

  /**
   * Puts back deliveries the reconciler found overdue, each under its waiting job ({@link waitingJobId}) due now,
   * unless that job is still alive (waiting, delayed or running: the delivery is waiting its turn, not lost). Returns
   * how many it put back. One round trip per shard reads which jobs exist.
   */
  async deliverLost(deliveries: readonly { id: string; orgId: string }[]): Promise<number> {
    const byQueue = new Map<Queue, { id: string; orgId: string }[]>();
    for (const d of deliveries) {
      const queue = this.queueFor('deliver', d.id);
      const list = byQueue.get(queue);
      if (list) list.push(d);
      else byQueue.set(queue, [d]);
    }
    const lost: WaitingDelivery[] = [];
    const now = new Date();
    await Promise.all(
      [...byQueue].map(async ([queue, list]) => {
        const pipeline = ((await queue.getBackend().client) as unknown as RedisConnection).pipeline();
        for (const d of list) pipeline.exists(queue.toKey(waitingJobId(d.id)));
        const answers = (await pipeline.exec()) ?? [];
        list.forEach((d, i) => {
          if (answers[i]?.[1] === 0) lost.push({ id: d.id, dueAt: now, orgId: d.orgId });
        });
      }),
    );
    await this.deliverLater(lost);
    return lost.length;
  }

  /**
   * Brings deliveries' waiting jobs ({@link deliverLater}) forward to now: their webhook has room again. A job that is
   * no longer delayed (running, done, taken by another worker) or gone is left as it is.
   */
  async recallWaiting(deliveryIds: readonly string[]): Promise<void> {
    await Promise.all(
      deliveryIds.map(async (id) => {
        const job = await this.queueFor('deliver', id).getJob(waitingJobId(id));
        await job?.promote().catch(() => undefined);
      }),
    );
  }

  /** Schedules the first attempts of fresh deliveries, due now, in chunks: one job (and one lease) per chunk. */
  async deliverNow(deliveryIds: readonly string[], orgId: string): Promise<void> {
    const jobs = [];
    for (let i = 0; i < deliveryIds.length; i += DELIVER_CHUNK) {
      const chunk = deliveryIds.slice(i, i + DELIVER_CHUNK);
      jobs.push({ name: 'deliver', data: deliverData(chunk, orgId, currentTraceparent()), key: chunk[0]! });
    }
    if (jobs.length > 0) await this.addSharded('deliver', jobs);
  }

  /**
   * Schedules a recover or replay task's deliveries at their send slots: one job (and one lease) per slot, delayed
   * until it, behind live jobs ({@link TASK_DELIVER_PRIORITY}).
   */
  async deliverScheduled(slots: readonly { ids: readonly string[]; dueAt: Date }[], orgId: string): Promise<void> {
    const now = Date.now();
    const jobs = [];
    for (const slot of slots) {
      const opts: JobsOptions = { delay: Math.max(0, slot.dueAt.getTime() - now), priority: TASK_DELIVER_PRIORITY };
      for (let i = 0; i < slot.ids.length; i += DELIVER_CHUNK) {
        const chunk = slot.ids.slice(i, i + DELIVER_CHUNK);
        jobs.push({ name: 'deliver', data: deliverData(chunk, orgId, currentTraceparent()), opts, key: chunk[0]! });
      }
    }
    if (jobs.length > 0) await this.addSharded('deliver', jobs);
  }

  /**
   * Schedules the next step of a task at `dueAt`. The id names the task and the due time (plus a reconciler round),
   * so a step is queued once; the task's lease in Postgres keeps two copies from running it twice anyway.
   */
  async taskStep(taskId: string, dueAt: Date, key?: string): Promise<void> {
    const data: JobData<'task'> = { taskId };
    await this.queueFor('task', taskId).add('task', data, {
      jobId: `t.${taskId}.${dueAt.getTime()}${key ? `.${key}` : ''}`,
      delay: Math.max(0, dueAt.getTime() - Date.now()),
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.mergedInFlight]);
    await Promise.allSettled(this.all().map((q) => q.close()));
  }
}
