import { z } from 'zod';
import { DELIVER_CHUNK } from '../tunables';

/**
 * The W3C `traceparent` of the span a job continues (CONTRACT 17: ingestion → fan-out → attempts); present only
 * when the producer traces.
 */
const trace = z.string().max(128).optional();

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
    /** A reconciler copy: its run counts its start on each event (packages/delivery/src/pipeline/fanout-guard.ts). */
    recovered: z.literal(true).optional(),
    trace,
  }),
  /** Turn a webhook's buffered batch items into deliveries (full batches, or those older than the linger). */
  batch: z.object({ webhookId: z.uuid(), orgId: z.uuid().optional(), trace }),
  /**
   * Make the next attempt of deliveries: a chunk of fresh deliveries of one fan-out (one lease statement for all),
   * or one delivery whose retry is due (retries stay individual jittered delayed jobs).
   */
  deliver: z.object({
    deliveryIds: z.array(z.uuid()).min(1).max(DELIVER_CHUNK),
    /** The organisation of the deliveries: the worker's room is shared fairly by it. */
    orgId: z.uuid(),
    trace,
  }),
  /** Take the next step (one page) of a recover or replay task (CONTRACT 11; packages/delivery/src/tasks/step.ts). */
  task: z.object({ taskId: z.uuid() }),
} as const;

export type JobName = keyof typeof JOBS;
export type JobData<N extends JobName> = z.output<(typeof JOBS)[N]>;
