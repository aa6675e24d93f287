/**
 * The delivery engine's tuning constants, in one place, each with why it has its value. What an operator may want to
 * change is configuration instead (packages/core/src/config.ts, docs/configuration.md); these are the engine's
 * own choices, measured or reasoned once and fixed.
 */

// Queues and jobs.

/** Longest a merged fan-out enqueue may take before its events are left to the reconciler. */
export const ENQUEUE_TIMEOUT_MS = 2_000;
/**
 * Least time between two merged fan-out enqueues of a process: under a steady stream of ingest flushes each job
 * carries what arrived meanwhile, so the worker handles fewer, larger jobs (bench/HISTORY.md has the figures); an
 * event after a quiet spell, or in a stream thinner than one flush per interval, is enqueued at once (GroupCommit),
 * so the most it adds is this, to fan-out only, never to the 202.
 * Every job costs the same whatever it carries (BullMQ's scripts, a read and a commit statement, a render task), so
 * at a few hundred single-event requests a second a longer interval means fewer, fuller jobs and less CPU per event
 * for the whole stack, at the price of this interval at most on the median. At 10 ms a stream of 200 single-event
 * requests a second still goes as jobs of two events, and the median ingest → receiver latency of a fresh webhook
 * measured from outside is 14 to 15 ms instead of 22 (bench/HISTORY.md has both comparisons).
 */
export const FANOUT_MERGE_MS = 10;

/** Most deliveries one deliver job carries. */
export const DELIVER_CHUNK = 200;

/**
 * BullMQ priority of the deliver jobs of recover and replay tasks. Jobs without a priority (live fan-out's,
 * retries, deliveries waiting for their origin) are taken first, so a task's sends wait while live work waits.
 */
export const TASK_DELIVER_PRIORITY = 100;

/** DELIVERY_QUEUE_SHARDS' default: enough queues that a Redis Cluster's masters share the fan-out and deliver work. */
export const DEFAULT_QUEUE_SHARDS = 8;

/**
 * Most callers one merged waiting-job enqueue carries: a run turns away at most DELIVER_CHUNK deliveries, so an
 * enqueue stays within a few thousand jobs, and a caller with a large backlog to put back does not make one
 * enqueue that the others wait behind.
 */
export const LATER_BATCH = 20;

// Attempts.

/** Time after the request's timeout to record its outcome; a lease past this means the worker died mid-attempt. */
export const LEASE_MARGIN_MS = 5_000;
/**
 * Longest a leased delivery waits in this process for a send slot (its webhook's and the process's) before it is
 * deferred to come back later. The lease covers this wait, so a delivery is never in flight twice.
 */
export const SLOT_WAIT_MS = 2_000;
/**
 * A deferred delivery is recorded due this much before the time it comes back: its job may run a little early by
 * another process's clock, and a lease needs the delivery due.
 */
export const DUE_AGAIN_EARLY_MS = 1_000;
/** Most attempt records (and lease releases) one statement carries (group commit). */
export const RECORD_BATCH = 500;
/**
 * Under a steady stream a record statement starts at most this often, and carries every attempt finished
 * meanwhile; after a quiet spell it goes at once. The record comes after the request, so this delays no arrival,
 * only the stored outcome and the delivery's place in the room (docs/delivery.md, step 5).
 */
export const RECORD_INTERVAL_MS = 20;
