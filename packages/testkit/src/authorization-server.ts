import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { exportJWK, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { testCa, type ReplyFn } from './receiver';

/** The resource (audience) of every access token the test authorization servers issue. */
export const TEST_RESOURCE = 'https://receiver.gatehook.test';
/** The scope every test client may ask for. */
export const TEST_SCOPE = 'ingest';

/** A key pair for assertions: its PEM private key (PKCS #8) and its public key. */
export interface AssertionKey {
  privateKeyPem: string;
  publicKey: KeyObject;
}

/** A fresh RSA (2048 bits) or EC (P-256) key pair. */
export function assertionKey(type: 'rsa' | 'ec' = 'rsa'): AssertionKey {
  const pair =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privateKeyPem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: pair.publicKey,
  };
}

/** A test authorization server: where its tokens come from, how many were asked for, and a check of a token. */
export interface TestAuthorizationServer {
  tokenUrl: string;
  /** Token requests received so far (every client, every outcome). */
  tokenRequests(): number;
  /** The claims of an access token this server issued and that has not expired; throws otherwise. */
  verify(token: string): Promise<JWTPayload>;
  close(): Promise<void>;
}

/** The clients registered with the oidc-provider server. */
export interface OidcClients {
  post: { clientId: string; clientSecret: string };
  basic: { clientId: string; clientSecret: string };
  jwt: { clientId: string; keyId: string; key: AssertionKey };
}

/**
 * A real OAuth 2.0 authorization server: oidc-provider on 127.0.0.1 over HTTPS (a certificate of the test CA) in a
 * child process, with a client for each of client_secret_post, client_secret_basic and private_key_jwt, all allowed
 * the client credentials grant. Its access tokens are JWTs for TEST_RESOURCE that live `accessTokenTtl` seconds.
 */
export async function startOidcProvider(
  options: { accessTokenTtl?: number } = {},
): Promise<TestAuthorizationServer & { clients: OidcClients }> {
  const { pki } = testCa();
  const signing = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingJwk = { ...(await exportJWK(signing.privateKey)), kid: 'as-key', alg: 'RS256', use: 'sig' };
  const clients: OidcClients = {
    post: { clientId: 'post-client', clientSecret: `post-${randomUUID()}` },
    basic: { clientId: 'basic-client', clientSecret: `basic-${randomUUID()}` },
    jwt: { clientId: 'jwt-client', keyId: 'client-key-1', key: assertionKey('rsa') },
  };
  const common = { grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: TEST_SCOPE };
  const settings = {
    keyPem: pki.keyPem,
    certPem: pki.certPem,
    signingJwk,
    resource: TEST_RESOURCE,
    scope: TEST_SCOPE,
    accessTokenTtl: options.accessTokenTtl ?? 3600,
    clients: [
      {
        ...common,
        client_id: clients.post.clientId,
        client_secret: clients.post.clientSecret,
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        ...common,
        client_id: clients.basic.clientId,
        client_secret: clients.basic.clientSecret,
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        ...common,
        client_id: clients.jwt.clientId,
        token_endpoint_auth_method: 'private_key_jwt',
        jwks: { keys: [{ ...(await exportJWK(clients.jwt.key.publicKey)), kid: clients.jwt.keyId, use: 'sig' }] },
      },
    ],
  };
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, 'authorization-server.mjs')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin!.end(JSON.stringify(settings));
  let requests = 0;
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`authorization server exited (${code})`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'token') requests += 1;
      const listening = /^listening (\d+)$/.exec(line);
      if (listening) resolve(Number(listening[1]));
    });
  });
  const issuer = `https://127.0.0.1:${port}`;
  return {
    tokenUrl: `${issuer}/token`,
    clients,
    tokenRequests: () => requests,
    async verify(token) {
      const { payload } = await jwtVerify(token, signing.publicKey, { issuer, audience: TEST_RESOURCE });
      return payload;
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The JWT-bearer test server's service account: the assertion's issuer and key. */
export interface ServiceAccount {
  issuer: string;
  keyId: string;
  key: AssertionKey;
}

/**
 * A token endpoint for the RFC 7523 JWT-bearer grant (as Google's): it verifies the assertion with jose (signature
 * by the service account's key, `iss`, `aud` = its token URL, `exp` at most 5 minutes after `iat`, a `jti` never
 * seen before), then issues a signed JWT access token carrying the assertion's `sub` and `scope`. `invalid_grant`
 * otherwise. It keeps each verified assertion's claims.
 */
export async function startJwtBearerServer(
  options: { accessTokenTtl?: number; keyType?: 'rsa' | 'ec' } = {},
): Promise<TestAuthorizationServer & { account: ServiceAccount; assertions: JWTPayload[] }> {
  const { pki } = testCa();
  const signing = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const account: ServiceAccount = {
    issuer: `svc-${randomUUID()}@gatehook.test`,
    keyId: 'sa-key-1',
    key: assertionKey(options.keyType ?? 'rsa'),
  };
  const assertions: JWTPayload[] = [];
  const seen = new Set<string>();
  let requests = 0;
  let tokenUrl = '';
  const refuse = (res: import('node:http').ServerResponse, error: string) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error }));
  };
  const server: Server = createServer({ key: pki.keyPem, cert: pki.certPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      requests += 1;
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
        return refuse(res, 'unsupported_grant_type');
      let claims: JWTPayload;
      try {
        ({ payload: claims } = await jwtVerify(form.get('assertion') ?? '', account.key.publicKey, {
          issuer: account.issuer,
          audience: tokenUrl,
          requiredClaims: ['exp', 'iat', 'jti'],
        }));
      } catch {
        return refuse(res, 'invalid_grant');
      }
      if (claims.exp! - claims.iat! > 300 || seen.has(claims.jti!)) return refuse(res, 'invalid_grant');
      seen.add(claims.jti!);
      assertions.push(claims);
      const ttl = options.accessTokenTtl ?? 3600;
      const accessToken = await new SignJWT({ scope: claims.scope, sub: claims.sub })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer(tokenUrl)
        .setAudience(TEST_RESOURCE)
        .setIssuedAt()
        .setExpirationTime(`${ttl}s`)
        .sign(signing.privateKey);
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ access_token: accessToken, token_type: 'Bearer', expires_in: ttl }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tokenUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  return {
    tokenUrl,
    account,
    assertions,
    tokenRequests: () => requests,
    async verify(token) {
      const { payload } = await jwtVerify(token, signing.publicKey, { issuer: tokenUrl, audience: TEST_RESOURCE });
      return payload;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A receiver's answer that accepts only a bearer token the given server issued and that has not expired (200),
 * and refuses anything else with 401, as a resource server does.
 */
export function bearerReply(server: Pick<TestAuthorizationServer, 'verify'>): ReplyFn {
  return async (request) => {
    const match = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''));
    if (!match) return { status: 401, body: 'no token' };
    try {
      await server.verify(match[1]!);
      return { status: 200, body: 'ok' };
    } catch {
      return { status: 401, body: 'bad token' };
    }
  };
}
