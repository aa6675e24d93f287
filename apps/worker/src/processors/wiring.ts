import type { Processor } from '../consumers';

/** How one queue of the catalogue is consumed: its processor, how many jobs a consumer takes at once, its lock. */
export interface JobWiring {
  processor: Processor;
  /** Jobs one consumer (one per queue and shard) takes at once. */
  concurrency: number;
  /** How long a taken job's lock lasts without renewal (BullMQ's default when absent). */
  lockDuration?: number;
}

/**
 * Fan-out and batch-flush jobs one worker takes at once. They spend their time waiting for the render pool, which
 * shares its threads fairly: enough of them run that one organisation's jobs waiting there never keep another
 * organisation's job from being taken. A waiting job costs little (its events and plan in memory).
 */
export const RENDERING_JOB_CONCURRENCY = 32;
