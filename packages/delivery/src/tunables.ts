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

// Flow control.

/**
 * The limit a webhook starts with in a worker process, before its receiver has answered anything. Small, as TCP's
 * slow start is: a receiver that hangs from the start holds this many slots, while a quick one doubles it with each
 * round of answers (one more per quick answer while busy) and reaches the ceiling within a few round trips.
 */
export const INITIAL_ENDPOINT_LIMIT = 2;

/** An answer slower than this does not raise the limit: the receiver is not keeping up, even if it says 2xx. */
export const QUICK_ANSWER_MS = 1_000;

/** What the limit is multiplied by on a timeout, a connection error, a 429 or a 5xx. */
export const BACKOFF_RATIO = 0.9;

/** Shortest time a delivery turned away by a full endpoint stays away. */
export const MIN_TURN_AWAY_MS = 250;

/** Longest: a delivery waiting on an endpoint that stays full looks again at least this often. */
export const MAX_TURN_AWAY_MS = 60_000;

/**
 * The time per request assumed of a receiver that has never answered, until the age of its requests says more: so
 * that one which hangs from its first request has a short line in the process (at the default 2 s slot wait and a
 * starting limit of 2, 16 waiters), not one as long as the room, while its requests are still young. It is also how
 * long, from its first request, the excess beyond that line waits for the receiver's first answer instead of being
 * turned away at once: a fresh receiver that is quick answers within moments, and then its whole burst is judged by
 * its real pace (a worker just started sees every webhook fresh, and turning away most of its first burst would send
 * each of those deliveries back through a job and a lease of its own); one that hangs holds them that long at most.
 */
export const UNKNOWN_HOLD_MS = 250;

/** Weight of the newest request in an endpoint's average time per request. */
export const HOLD_SMOOTHING = 0.2;

/** Endpoints whose limit and pace are remembered while they have nothing in flight (least recently used forgotten). */
export const REMEMBERED_ENDPOINTS = 10_000;

/** Deliveries turned away whose endpoint is remembered, so their next turn can be refused without I/O. */
export const REMEMBERED_WAITERS = 100_000;

/**
 * How long deliveries recalled to a webhook with room (SendSchedulerOptions.recall) count against that room while
 * they are on their way back; a recall whose job another worker took, or that found no job, stops counting then.
 */
export const RECALL_WINDOW_MS = 1_000;

/**
 * Longest a fan-out waits for room to run its fresh deliveries itself before it queues them instead. A saturated
 * worker frees its 250 places several times a second, so fan-out nearly always gets them and its deliveries keep
 * the local path (created leased, bodies in hand); the bound keeps a fan-out from waiting behind an endpoint that
 * holds its places for a whole timeout.
 */
export const ROOM_WAIT_MS = 1_000;

/** Longest wait for Redis before a turn is granted anyway (fail open). */
export const PACE_TIMEOUT_MS = 250;

/**
 * A request told to come back within this long (and within two turns) waits for it in place, holding its send slot,
 * instead of going back to the queue: a delivery returning from the queue arrives a little late or a little early
 * (timers, the job system), and without this, one that is early by a millisecond would be sent back to the end of the
 * line while the schedule slips by every late one's delay.
 */
export const INLINE_WAIT_MS = 100;

/** How many turns a request asks for in place before it is sent back to the queue. */
export const INLINE_TRIES = 3;

/** At most one warning per this interval while Redis cannot be asked. */
export const WARN_INTERVAL_MS = 10_000;

/**
 * How much wider than 1/rate turns are spaced. Turns are exact on the Redis clock, but between the grant and the
 * receiver lie the worker's event loop, signing, TLS and the network: 2% buys about 20 ms of such jitter at any rate
 * (the rate × the margin of one interval) before a one-second window at the receiver could hold one request more.
 */
export const TURN_SPACING_PERCENT = 102;

/**
 * Longest a test send to a webhook with `rate_limit_per_second` waits for its turn; a turn further away is answered
 * 429 `rate_limited` with Retry-After (the request waits in the API, holding the caller's connection).
 */
export const TEST_SEND_TURN_WAIT_MS = 2_000;

// Ingestion, fan-out and rendering.

export const MAX_EVENTS_PER_STATEMENT = 5000;

/**
 * Fan-out runs an event may take without completing before it is parked: run alone, the same event failed this
 * many times (about half a minute of reconciler rounds by default), so it will not get better by itself.
 */
export const MAX_FANOUT_ATTEMPTS = 5;

/**
 * Longest a plan task runs before it hands its thread back (plan.ts cuts between two events): the granularity of
 * fairness. A single render may take longer (up to its 1 s budget); a slice always finishes the render it began.
 */
export const RENDER_SLICE_MS = 50;

/**
 * A render task still running this long after it was handed to its thread has its thread terminated and replaced:
 * far past the 1 s render budget of an event and of a request, so only a thread that stopped checking its clock
 * reaches it. The clock is the wall's: on a machine whose cores are shared many times over (or a thread that is
 * still loading its code after a replacement) a healthy task can take several times its CPU time, and a deadline
 * that fired then would cascade, each replacement thread loading again while its tasks wait.
 */
export const RENDER_HARD_DEADLINE_MS = 30_000;

/**
 * Render time an organisation may use in a render pool per ORG_CPU_WINDOW_MS before it is held to T−1 of the
 * pool's T threads (CONTRACT 15). Past it, one thread always stays free for the other organisations, so their work
 * waits at most for one task that is already running, never for this organisation's backlog.
 */
export const ORG_CPU_BUDGET_MS = 250;

/** The window over which an organisation's render time is counted. */
export const ORG_CPU_WINDOW_MS = 1_000;

/**
 * Tasks no longer than this are short: an organisation over its budget whose tasks in the window were all short keeps
 * every thread (work-conserving), since another organisation's task then waits at most for one of them, well within
 * the 250 ms CONTRACT 15 allows. Above a plan slice (RENDER_SLICE_MS, 50 ms) with room for a loaded machine's jitter.
 */
export const SHORT_TASK_MS = 150;

/** In string length (UTF-16 units), which is free to read; a batch is far past it whatever its characters. */
export const COMPRESS_FROM_LENGTH = 4096;

/**
 * Longest a process renders with a webhook configuration it cached before a change, when the change's invalidation
 * message was lost (it is otherwise honoured within a second).
 */
export const WEBHOOK_CONFIG_TTL_MS = 60_000;

/** Redactors kept per version of a webhook's secret values (least recently used forgotten). */
export const REDACTORS_KEPT = 256;

/** Characters of values the kept redactors may hold in all (each holds a few forms of every value). */
export const REDACTOR_CHARS_KEPT = 64 * 1024 * 1024;

// Recover and replay tasks.

/** How long a task whose webhook has a full backlog waits before it looks again. */
export const TASK_WAIT_MS = 100;

/**
 * How far ahead a task paced by TASK_SEND_RATE schedules its sends. Its next step comes when less than half of
 * this is left, so a step schedules about half a horizon of sends: one step a second at most rates.
 */
export const TASK_PACING_HORIZON_MS = 1000;

/** A paced task's sends go in one deliver job (one lease statement) per this much of its schedule. */
export const TASK_SEND_TICK_MS = 50;
