/**
 * The delivery engine's front door: what apps build the engine with and what they talk to it through. Everything
 * else in the package is the engine's inside.
 */
export { JOBS, type JobData, type JobName } from './queues/catalogue';
export { queuePrefix, queueRoundTrip, shardOf, SHARDED_QUEUES, waitingJobId } from './queues/topology';
export { DeliveryQueues } from './queues/producer';
export * as tunables from './tunables';
