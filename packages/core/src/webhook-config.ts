import type { StoredWebhookAuth } from './webhook-auth';

/** How a webhook's events are put into request bodies (SPEC 2.1). */
export type WebhookFormat = 'single' | 'array' | 'ndjson';
export type WebhookStatus = 'active' | 'paused' | 'disabled';

/**
 * A webhook's configuration as the delivery engine needs it, in the domain's words: what the hot path reads from
 * the database (secrets still encrypted), independent of the ORM's generated row type.
 */
export interface StoredWebhook {
  id: string;
  orgId: string;
  name: string;
  status: WebhookStatus;
  events: readonly string[];
  condition: string;
  format: WebhookFormat;
  maxEvents: number;
  template: string;
  urlEncrypted: string;
  /** Names of the webhook's variables, in clear (their values are in `varsEncrypted`). */
  varNames: readonly string[];
  varsEncrypted: string | null;
  headersEncrypted: string | null;
  secretEncrypted: string;
  previousSecretEncrypted: string | null;
  previousSecretValidUntil: Date | null;
  /** Events received before this instant are not delivered (creation, enable and resume set it). */
  activeSince: Date;
  /** `{"cert","key"}` as JSON, encrypted (mTLS, CONTRACT 18); null: none. */
  clientCertificateEncrypted: string | null;
  /** Most requests in any one-second window across all workers; null: none (CONTRACT 18). */
  rateLimitPerSecond: number | null;
  /** OAuth 2.0 destination authentication without its secret (CONTRACT 20); null: none. */
  auth: StoredWebhookAuth | null;
  /** The client secret or private key of `auth`, encrypted. */
  authSecretEncrypted: string | null;
}

/** Whether a webhook's subscription covers an action (`*` or the exact name). */
export function subscribes(webhook: Pick<StoredWebhook, 'events'>, action: string): boolean {
  return webhook.events.includes('*') || webhook.events.includes(action);
}

/** Whether events of this webhook are sent one by one, or gathered in the batch buffer first. */
export function batches(webhook: Pick<StoredWebhook, 'format' | 'maxEvents'>): boolean {
  return webhook.format !== 'single' && webhook.maxEvents > 1;
}
