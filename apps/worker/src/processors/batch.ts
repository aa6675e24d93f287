import type { DeliveryEngine } from '@gatehook/delivery';
import { RENDERING_JOB_CONCURRENCY, type JobWiring } from './wiring';

/** The `batch` queue: a webhook's buffered batch items turned into deliveries. */
export function batchJob(engine: DeliveryEngine): JobWiring {
  return { processor: (job) => engine.handlers.batch(job), concurrency: RENDERING_JOB_CONCURRENCY };
}
