import type { DeliveryEngine } from '@gatehook/delivery';
import { RENDERING_JOB_CONCURRENCY, type JobWiring } from './wiring';

/** The `fanout` queue: committed audit events fanned out to the matching webhooks of their organisation. */
export function fanoutJob(engine: DeliveryEngine): JobWiring {
  return { processor: (job) => engine.handlers.fanout(job), concurrency: RENDERING_JOB_CONCURRENCY };
}
