import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import type { Db, Pool } from '@gatehook/db/client';
import type { DeliveryQueues } from './queues/producer';
import type { LocalRuns } from './local-run';
import type { RenderPool } from './render/pool';
import type { WebhookConfigs } from './webhook-configs';
import type { WebhookAnnouncer } from './state/webhook';

/**
 * The stages of a delivery's latency an operator watches (`gatehook_delivery_stage_seconds`): `ingest` from the
 * event's acceptance to the start of its fan-out, `fanout` from then (the delivery's creation) to the start of its
 * first attempt, `send` from an attempt's start to its answer.
 */
export type DeliveryStage = 'ingest' | 'fanout' | 'send';

/** What fan-out, batch flushes and attempts share in one worker process. */
export interface EngineContext {
  db: Db;
  pool: Pool;
  box: SecretBox;
  queues: DeliveryQueues;
  configs: WebhookConfigs;
  /** Worker threads that match, render, pack and seal (render/pool.ts). */
  render: RenderPool;
  /** Tells every process that an organisation's webhooks changed (Redis pub/sub), after a change commits. */
  announce: WebhookAnnouncer;
  batchLingerMs: number;
  logger?: Logger;
  /** Runs fresh deliveries' first attempts in this process; without it they are queued. */
  local?: LocalRuns;
  /** Reports how long a delivery spent in one stage of its latency (metrics). */
  onStage?: (stage: DeliveryStage, seconds: number) => void;
}
