/**
 * Why a delivery ended `failed` other than by an attempt's own answer: the delivery's `error` (CONTRACT 5) is one of
 * these codes, alone or followed by `: ` and a readable detail. The attempt-level codes (`timeout`, `http_503`, ...)
 * are egress's (`SendErrorCode` in packages/egress/src/client.ts) and live on the attempts.
 */
export type DeliveryErrorCode =
  /** Eight attempts (not counting 429s) failed. */
  | 'attempts_exhausted'
  /** The receiver answered 410 Gone; the webhook is disabled. */
  | 'gone'
  /** The event did not render through the webhook's template. */
  | 'template_error'
  /** The event alone renders to a body over 1 MB. */
  | 'payload_too_large'
  /** The webhook was deleted, paused or disabled while the delivery was queued or in flight. */
  | 'webhook_deleted'
  | 'webhook_paused'
  | 'webhook_disabled'
  /** The delivery has no stored body to send. */
  | 'no_body'
  /** A stored secret or body cannot be decrypted with the configured keys. */
  | 'secret_unreadable'
  /** A PATCH moved the webhook's URL to another origin: the body was rendered for the old receiver (CONTRACT 15). */
  | 'url_origin_changed';

/** A delivery's `error`: the code, and a detail when one helps the admin. */
export function deliveryError(code: DeliveryErrorCode, detail?: string): string {
  return detail ? `${code}: ${detail}` : code;
}

const stopped = {
  paused: 'webhook_paused',
  disabled: 'webhook_disabled',
  deleted: 'webhook_deleted',
} as const satisfies Record<string, DeliveryErrorCode>;

/** The code of a webhook that stopped its deliveries: paused, disabled or deleted. */
export function stoppedBy<S extends keyof typeof stopped>(status: S): (typeof stopped)[S] {
  return stopped[status];
}
