import { randomUUID, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { SignJWT } from 'jose';
import * as oauth from 'oauth4webapi';
import type { StoredWebhookAuth } from '@gatehook/core/webhook-auth';
import { inspectSigningKey, type AssertionAlgorithm } from './signing-key';

/** A webhook's OAuth 2.0 configuration with its secret in clear, and the key its tokens are cached under. */
export type DestinationAuth = StoredWebhookAuth & {
  /** The client secret or the PEM private key. */
  secret: string;
  /** The webhook and the version of its `auth`: a change of `auth` makes a new key, so cached tokens are not reused. */
  cacheKey: string;
};

/** Seconds an assertion (client assertion or JWT-bearer grant) is valid: at most 5 minutes (CONTRACT 20). */
export const ASSERTION_LIFETIME_S = 300;

/** RFC 7523 2.1: the grant type of the JWT-bearer grant. */
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** One request to the token endpoint, made by the egress client: its answer, or the transport failure. */
export interface TokenExchange {
  (request: {
    url: string;
    headers: Record<string, string>;
    body: string;
  }): Promise<{ statusCode: number; error: string | null; headers?: IncomingHttpHeaders; body: Buffer }>;
}

/** A token endpoint's answer: an access token and its lifetime (null when the server gave none), or why not. */
export type TokenOutcome =
  { ok: true; accessToken: string; expiresInSeconds: number | null } | { ok: false; reason: string };

// An error code the token endpoint chose is reported as it is when it looks like one (RFC 6749 5.2 codes are
// printable ASCII); anything else is reported by the HTTP status.
const ERROR_CODE = /^[\x21\x23-\x5B\x5D-\x7E]{1,64}$/;

class TransportFailure extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

function toHeaders(headers: IncomingHttpHeaders | undefined): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) out.append(name, one);
  }
  return out;
}

/** Signs an assertion with the webhook's key: a fresh `jti`, issued now, valid for ASSERTION_LIFETIME_S. */
async function signAssertion(
  key: KeyObject,
  alg: AssertionAlgorithm,
  keyId: string | null,
  claims: Record<string, string>,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg, typ: 'JWT', ...(keyId ? { kid: keyId } : {}) })
    .setJti(randomUUID())
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + ASSERTION_LIFETIME_S)
    .sign(key);
}

function openKey(pem: string): { key: KeyObject; alg: AssertionAlgorithm } {
  const checked = inspectSigningKey(pem);
  // Checked on save, so this should not occur; reported like a token endpoint's refusal, never with the key.
  if (!checked.ok) throw new TransportFailure('invalid_private_key');
  return checked;
}

/** The client authentication of a client-credentials request (RFC 6749 2.3, RFC 7523 2.2). */
function clientAuthentication(auth: DestinationAuth & { type: 'oauth2_client_credentials' }): oauth.ClientAuth {
  if (auth.credential === 'client_secret') {
    return auth.client_auth === 'basic' ? oauth.ClientSecretBasic(auth.secret) : oauth.ClientSecretPost(auth.secret);
  }
  return async (_as, client, body) => {
    const { key, alg } = openKey(auth.secret);
    body.set('client_id', client.client_id);
    body.set('client_assertion_type', CLIENT_ASSERTION_TYPE);
    body.set(
      'client_assertion',
      await signAssertion(key, alg, auth.key_id, { iss: client.client_id, sub: client.client_id, aud: auth.token_url }),
    );
  };
}

/** The JWT-bearer grant authenticates by its assertion alone: no client authentication is added. */
const NO_CLIENT_AUTHENTICATION: oauth.ClientAuth = () => undefined;

/**
 * Asks the token endpoint for an access token (CONTRACT 20) with oauth4webapi, every request made by `exchange`
 * (the egress client: address policy at connect, proxy, TLS ≥ 1.2, no redirects, the attempt's timeout). Never
 * throws; a failure's reason is the endpoint's error code, its HTTP status (`http_<status>`) or the transport's
 * error (`timeout`, `connection_refused`, `tls_error`, ...), never a token or a secret.
 */
export async function requestToken(auth: DestinationAuth, exchange: TokenExchange): Promise<TokenOutcome> {
  let status = 0;
  const customFetch = async (
    url: string,
    init: { body?: unknown; headers?: Record<string, string> },
  ): Promise<Response> => {
    const answer = await exchange({ url, headers: init.headers ?? {}, body: String(init.body ?? '') });
    if (answer.statusCode === 0) throw new TransportFailure(answer.error ?? 'network_error');
    status = answer.statusCode;
    const empty = status === 204 || status === 205 || status === 304;
    return new Response(empty ? null : new Uint8Array(answer.body), { status, headers: toHeaders(answer.headers) });
  };
  const as: oauth.AuthorizationServer = { issuer: new URL(auth.token_url).origin, token_endpoint: auth.token_url };
  const options = { [oauth.customFetch]: customFetch as unknown as typeof fetch };
  try {
    let response: Response;
    let client: oauth.Client;
    if (auth.type === 'oauth2_client_credentials') {
      client = { client_id: auth.client_id };
      const parameters = new URLSearchParams();
      if (auth.scope) parameters.set('scope', auth.scope);
      if (auth.audience) parameters.set('audience', auth.audience);
      response = await oauth.clientCredentialsGrantRequest(as, client, clientAuthentication(auth), parameters, options);
    } else {
      client = { client_id: auth.issuer };
      const { key, alg } = openKey(auth.secret);
      const claims: Record<string, string> = {
        iss: auth.issuer,
        sub: auth.subject ?? auth.issuer,
        aud: auth.audience ?? auth.token_url,
      };
      if (auth.scope) claims.scope = auth.scope;
      const assertion = await signAssertion(key, alg, auth.key_id, claims);
      response = await oauth.genericTokenEndpointRequest(
        as,
        client,
        NO_CLIENT_AUTHENTICATION,
        JWT_BEARER_GRANT,
        { assertion },
        options,
      );
    }
    const token = await oauth.processGenericTokenEndpointResponse(as, client, response);
    const expiresIn = typeof token.expires_in === 'number' && token.expires_in > 0 ? token.expires_in : null;
    return { ok: true, accessToken: token.access_token, expiresInSeconds: expiresIn };
  } catch (error) {
    return { ok: false, reason: failureReason(error, status) };
  }
}

function failureReason(error: unknown, status: number): string {
  if (error instanceof TransportFailure) return error.code;
  if (error instanceof oauth.ResponseBodyError)
    return ERROR_CODE.test(error.error) ? error.error : `http_${error.status}`;
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    const code = error.cause.map((challenge) => challenge.parameters.error).find((c) => c !== undefined);
    return code !== undefined && ERROR_CODE.test(code) ? code : `http_${error.status}`;
  }
  if (status !== 0 && (status < 200 || status > 299)) return `http_${status}`;
  // A 2xx without a usable access token (not JSON, no access_token, no token_type).
  return 'invalid_token_response';
}
