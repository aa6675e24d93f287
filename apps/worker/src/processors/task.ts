import type { Config } from '@gatehook/core/config';
import type { DeliveryEngine } from '@gatehook/delivery';
import type { JobWiring } from './wiring';

/** Steps of different tasks run side by side; each is short (one page), so a few slots serve many tasks. */
export const TASK_CONCURRENCY = 2;

/**
 * The `task` queue: one job is one step (one page) of a recover or replay task, held for the task's lease, so a
 * step is never taken over while it runs.
 */
export function taskJob(engine: DeliveryEngine, config: Config): JobWiring {
  return {
    processor: (job) => engine.handlers.task(job),
    concurrency: TASK_CONCURRENCY,
    lockDuration: config.TASK_LEASE_MS,
  };
}
