import type { WebhookAuthView } from './webhook-schema';

/**
 * A webhook's OAuth 2.0 destination authentication as stored (CONTRACT 20), without its secret: what the `auth`
 * column holds in clear. `credential` names which secret `auth_secret_encrypted` holds.
 */
export type StoredWebhookAuth =
  | {
      type: 'oauth2_client_credentials';
      token_url: string;
      client_id: string;
      credential: 'client_secret' | 'private_key';
      client_auth: 'body' | 'basic';
      key_id: string | null;
      scope: string | null;
      audience: string | null;
    }
  | {
      type: 'oauth2_jwt_bearer';
      token_url: string;
      issuer: string;
      credential: 'private_key';
      key_id: string | null;
      subject: string | null;
      scope: string | null;
      audience: string | null;
    };

/** `auth` as the API returns it: the stored secret's name with "" as its value, never the secret. */
export function webhookAuthView(auth: StoredWebhookAuth | null): WebhookAuthView {
  if (auth === null) return null;
  const secret = auth.credential === 'client_secret' ? { client_secret: '' as const } : { private_key: '' as const };
  if (auth.type === 'oauth2_client_credentials') {
    return {
      type: auth.type,
      token_url: auth.token_url,
      client_id: auth.client_id,
      client_auth: auth.client_auth,
      key_id: auth.key_id,
      scope: auth.scope,
      audience: auth.audience,
      ...secret,
    };
  }
  return {
    type: auth.type,
    token_url: auth.token_url,
    issuer: auth.issuer,
    subject: auth.subject,
    key_id: auth.key_id,
    scope: auth.scope,
    audience: auth.audience,
    ...secret,
  };
}

/** Reads the `auth` column (JSON) back into its type; anything else is none. */
export function parseStoredWebhookAuth(value: unknown): StoredWebhookAuth | null {
  if (value === null || typeof value !== 'object') return null;
  const type = (value as { type?: unknown }).type;
  return type === 'oauth2_client_credentials' || type === 'oauth2_jwt_bearer' ? (value as StoredWebhookAuth) : null;
}
