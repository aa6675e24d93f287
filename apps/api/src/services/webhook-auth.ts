import type { SecretBox } from '@gatehook/core/encryption';
import type { FieldIssue } from '@gatehook/core/errors';
import { parseStoredWebhookAuth, webhookAuthView, type StoredWebhookAuth } from '@gatehook/core/webhook-auth';
import type { WebhookAuthInput } from '@gatehook/core/webhook-schema';
import { Prisma } from '@gatehook/db/generated/client';
import { checkDestinationUrl, type CidrList, type HostLookup } from '@gatehook/egress/address-policy';
import { inspectSigningKey } from '@gatehook/egress/oauth/signing-key';

/** The columns of a webhook's `auth` (CONTRACT 20): the configuration without its secret, and the secret encrypted. */
export interface AuthColumns {
  auth: StoredWebhookAuth | null;
  authSecretEncrypted: string | null;
}

/** The columns as Prisma writes them (a JSON column is cleared with DbNull, not null). */
export function authData(columns: AuthColumns) {
  return {
    auth: columns.auth === null ? Prisma.DbNull : (columns.auth as Prisma.InputJsonObject),
    authSecretEncrypted: columns.authSecretEncrypted,
  };
}

/** The stored columns of a webhook row. */
export function storedAuthColumns(row: { auth: unknown; authSecretEncrypted: string | null }): AuthColumns {
  return { auth: parseStoredWebhookAuth(row.auth), authSecretEncrypted: row.authSecretEncrypted };
}

/** Checks `auth.token_url` like a webhook's url (https, address policy); one issue on `auth.token_url` or none. */
export async function checkTokenUrl(
  auth: WebhookAuthInput | null | undefined,
  opts: { allow: CidrList; lookup?: HostLookup },
): Promise<FieldIssue[]> {
  if (!auth) return [];
  const verdict = await checkDestinationUrl(auth.token_url, opts);
  return verdict.ok ? [] : [{ path: 'auth.token_url', message: verdict.message }];
}

/** A custom `Authorization` header beside `auth` would be overwritten by the token: refused on the header. */
export function authorizationHeaderIssues(
  auth: StoredWebhookAuth | WebhookAuthInput | null,
  headerNames: readonly string[],
): FieldIssue[] {
  if (auth === null) return [];
  return headerNames
    .filter((name) => name.toLowerCase() === 'authorization')
    .map((name) => ({
      path: `headers.${name}`,
      message: 'a webhook with auth sends the access token as Authorization; remove this header or auth',
    }));
}

function secretOf(auth: WebhookAuthInput): { credential: 'client_secret' | 'private_key'; value: string } | null {
  if (auth.type === 'oauth2_client_credentials' && auth.client_secret !== '')
    return { credential: 'client_secret', value: auth.client_secret };
  if (auth.private_key !== '') return { credential: 'private_key', value: auth.private_key };
  return null;
}

function withoutSecret(auth: WebhookAuthInput, credential: 'client_secret' | 'private_key'): StoredWebhookAuth {
  if (auth.type === 'oauth2_client_credentials') {
    return {
      type: auth.type,
      token_url: auth.token_url,
      client_id: auth.client_id,
      credential,
      client_auth: auth.client_auth,
      key_id: auth.key_id,
      scope: auth.scope,
      audience: auth.audience,
    };
  }
  return {
    type: auth.type,
    token_url: auth.token_url,
    issuer: auth.issuer,
    credential: 'private_key',
    key_id: auth.key_id,
    subject: auth.subject,
    scope: auth.scope,
    audience: auth.audience,
  };
}

/** The field a missing secret of this type is reported on. */
function secretPath(auth: WebhookAuthInput): string {
  return auth.type === 'oauth2_client_credentials' ? 'auth' : 'auth.private_key';
}

/**
 * The columns for a given `auth` (create, or a PATCH that gives one): the secret given, or, when it is blank and
 * `keep` allows it, the stored one. A private key must be RSA of 2048 to 4096 bits or EC on P-256 or P-384.
 * `keep` is null when nothing may be kept (create, another type, a URL on another origin: then `originChanged`).
 */
export function authColumns(
  box: SecretBox,
  id: string,
  given: WebhookAuthInput | null,
  keep: { stored: AuthColumns; originChanged: boolean } | null,
): { columns: AuthColumns; issues: FieldIssue[] } {
  if (given === null) return { columns: { auth: null, authSecretEncrypted: null }, issues: [] };
  const place = { column: 'webhooks.auth_secret_encrypted', row: id } as const;
  const secret = secretOf(given);
  if (secret !== null) {
    if (secret.credential === 'private_key') {
      const key = inspectSigningKey(secret.value);
      if (!key.ok)
        return {
          columns: keep?.stored ?? { auth: null, authSecretEncrypted: null },
          issues: [{ path: 'auth.private_key', message: key.message }],
        };
    }
    return {
      columns: { auth: withoutSecret(given, secret.credential), authSecretEncrypted: box.encrypt(secret.value, place) },
      issues: [],
    };
  }
  const stored = keep?.stored;
  if (keep?.originChanged && stored?.auth) {
    const path = given.type === 'oauth2_client_credentials' ? `auth.${stored.auth.credential}` : 'auth.private_key';
    return { columns: stored, issues: [{ path, message: "must be supplied again when the URL's origin changes" }] };
  }
  if (stored?.auth && stored.authSecretEncrypted && stored.auth.type === given.type) {
    const kept = withoutSecret(given, stored.auth.credential);
    if (
      kept.type === 'oauth2_client_credentials' &&
      kept.credential === 'private_key' &&
      kept.client_auth === 'basic'
    ) {
      return {
        columns: stored,
        issues: [
          {
            path: 'auth.client_auth',
            message: 'client_auth applies to client_secret only; a private_key signs a client assertion',
          },
        ],
      };
    }
    return { columns: { auth: kept, authSecretEncrypted: stored.authSecretEncrypted }, issues: [] };
  }
  const message =
    given.type === 'oauth2_client_credentials' ? 'client_secret or private_key is required' : 'private_key is required';
  return {
    columns: stored ?? { auth: null, authSecretEncrypted: null },
    issues: [{ path: secretPath(given), message }],
  };
}

/** Whether two `auth` columns differ (the secret by its ciphertext: a secret given again is a change). */
export function authChanged(a: AuthColumns, b: AuthColumns): boolean {
  return a.authSecretEncrypted !== b.authSecretEncrypted || JSON.stringify(a.auth) !== JSON.stringify(b.auth);
}

/** The audit diff of a change of `auth`: its API form on both sides, never a secret. */
export function authChange(from: AuthColumns, to: AuthColumns) {
  return { field: 'auth', old: webhookAuthView(from.auth), new: webhookAuthView(to.auth) };
}
