/**
 * The delivery engine's front door: the engine an app builds (createDeliveryEngine), what it wires the engine's
 * handlers to (the job catalogue and the queues' topology), ingestion for the API, and the engine's tunables.
 * Everything else in the package is the engine's inside.
 */
export {
  createDeliveryEngine,
  type DeliverResult,
  type DeliveryEngine,
  type EngineHandlers,
  type EngineInfrastructure,
  type EngineJob,
  type EngineObserver,
} from './engine';
export type { DeliveryStage } from './context';
export { ingestAuditEvents, type IngestDeps, type IngestResult } from './ingest';
export { JOBS, type JobData, type JobName } from './queues/catalogue';
export { queuePrefix, queueRoundTrip, shardOf, SHARDED_QUEUES, waitingJobId } from './queues/topology';
export { DeliveryQueues } from './queues/producer';
export type { WebhookConfigs } from './webhook-configs';
export * as tunables from './tunables';
