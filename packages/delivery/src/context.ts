import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import type { Db, Pool } from '@gatehook/db/client';
import type { DeliveryQueues } from './jobs';
import type { LocalRuns } from './pipeline/local-run';
import type { RenderPool } from './render/pool';
import type { WebhookConfigs } from './webhook-configs';
import type { WebhookAnnouncer } from './state/webhook';

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
}
