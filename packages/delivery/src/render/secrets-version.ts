import { createHash } from 'node:crypto';

/** A webhook's stored secret values that a template can print (its variables and custom headers), encrypted. */
export interface SecretsOwner {
  varsEncrypted: string | null;
  headersEncrypted: string | null;
}

/**
 * The version of a webhook's variable and custom header values: a digest of their stored tokens, which the API
 * rewrites only when a value changes (the same rule as `webhooks.secrets_changed_at`). A delivery records the
 * version its body was rendered with (`deliveries.secrets_version`), so the request view knows whether the webhook
 * still holds every value the body may carry. Tells nothing of the values.
 */
export function secretsVersionOf(owner: SecretsOwner): string {
  return createHash('sha256')
    .update(`${owner.varsEncrypted ?? ''}\n${owner.headersEncrypted ?? ''}`)
    .digest('base64url')
    .slice(0, 22);
}
