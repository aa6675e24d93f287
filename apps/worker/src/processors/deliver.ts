import { DelayedError } from 'bullmq';
import type { Config } from '@gatehook/core/config';
import type { DeliveryEngine } from '@gatehook/delivery';
import type { JobWiring } from './wiring';

/** Deliver jobs a worker takes at once per send slot; the room (flow control) bounds what they lease. */
const DELIVER_JOBS_PER_SLOT = 4;

/**
 * The `deliver` queue: the next attempts of deliveries. A job that is a delivery's waiting job, turned away again by
 * a full webhook, moves back to the delayed set until its time instead of ending.
 */
export function deliverJob(engine: DeliveryEngine, config: Config): JobWiring {
  return {
    async processor(job, token) {
      const { summary, delayUntil } = await engine.handlers.deliver(job);
      if (delayUntil) {
        await job.moveToDelayed(delayUntil.getTime(), token);
        throw new DelayedError();
      }
      return summary;
    },
    // Jobs taken wait for room fairly by organisation, holding only their ids: taking several jobs per slot keeps
    // one organisation's backlog of jobs from keeping another's job in Redis.
    concurrency: config.DELIVERY_CONCURRENCY * DELIVER_JOBS_PER_SLOT,
    // The lock outlasts the request timeout, so a job is never considered stalled while its request runs.
    lockDuration: config.DELIVERY_TIMEOUT_MS + 5_000,
  };
}
