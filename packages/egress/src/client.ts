import type { LookupAddress, LookupOptions } from 'node:dns';
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import tls from 'node:tls';
import got, { type Got, type Response } from 'got';
import { LRUCache } from 'lru-cache';
import { sanitiseText } from '@gatehook/core/sanitise';
import {
  classifyAddress,
  findBlockedAddress,
  hostOf,
  systemLookup,
  type CidrList,
  type HostLookup,
} from '@gatehook/egress/address-policy';
import { clientCertificateIdentity, type ClientCertificate } from '@gatehook/egress/client-certificate';
import { parseProxyUrl, PROXY_ERROR_CODE, TunnelAgent } from '@gatehook/egress/proxy-tunnel';
import { DestinationTokens, type TokenFetchOutcome } from '@gatehook/egress/oauth/token-cache';
import type { DestinationAuth } from '@gatehook/egress/oauth/token-request';

/** Most of a response body ever read; the rest is dropped with the connection. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** Size of the response body kept on the attempt. */
export const SNIPPET_BYTES = 1024;

/** A Retry-After longer than this is no valid delay or date; it is cut before anyone stores or parses it. */
export const MAX_RETRY_AFTER_LENGTH = 64;

// Idle keep-alive sockets are dropped before common server idle timeouts (Node 5 s) so a POST is
// rarely written into a socket the receiver is closing; Node also honours a shorter Keep-Alive hint.
const IDLE_SOCKET_MS = 4_000;
const DEFAULT_MAX_SOCKETS_PER_ORIGIN = 8;
const BLOCKED_CODE = 'EGRESS_BLOCKED_ADDRESS';
/**
 * Connection pools kept for distinct client certificates (one per certificate, never shared between two); the least
 * recently used is retired past this, its sockets closed once any request still on them is over.
 */
const CLIENT_CERTIFICATE_POOLS = 1_000;

export type SendErrorCode =
  | 'timeout'
  | 'connection_refused'
  | 'connection_reset'
  | 'tls_error'
  | 'dns_error'
  | 'blocked_address'
  | 'redirect_refused'
  | 'invalid_url'
  | 'not_https'
  | 'network_error'
  | 'proxy_error'
  | `http_${number}`
  /** The destination's OAuth 2.0 token could not be had (CONTRACT 20); the receiver was not called. */
  | `auth_failed: ${string}`;

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string | Buffer;
  /** Presented when the receiver asks for one (mTLS); connections are pooled per certificate. */
  clientCertificate?: ClientCertificate | null;
  /** OAuth 2.0 destination authentication: the request is sent with a token obtained for it (CONTRACT 20). */
  auth?: DestinationAuth | null;
}

export interface SendResult {
  /** 0 when no response arrived. */
  statusCode: number;
  /** null on a 2xx; never contains the URL. */
  error: SendErrorCode | null;
  durationMs: number;
  /** First SNIPPET_BYTES of the body as UTF-8 text. */
  responseSnippet: string;
  /** Raw Retry-After header, for the scheduler to interpret. */
  retryAfter: string | null;
  headers?: IncomingHttpHeaders;
}

export interface EgressClientOptions {
  allow: CidrList;
  /** PEM of extra CAs trusted on top of Node's root store (test receivers with a private CA). */
  extraCaPem?: string;
  timeoutMs: number;
  userAgent: string;
  maxSocketsPerOrigin?: number;
  /** Resolver used at connection time; the system resolver unless a test injects one. */
  lookup?: HostLookup;
  /**
   * EGRESS_PROXY_URL: an HTTP CONNECT proxy every request goes through. The destination is still resolved and checked
   * here and the proxy is asked for a tunnel to the checked address (proxy-tunnel.ts).
   */
  proxyUrl?: string;
  /** Told of every OAuth 2.0 token fetch and what it came to (the metric of token fetches). */
  onTokenFetch?: (outcome: TokenFetchOutcome) => void;
}

export interface EgressClient {
  send(req: SendRequest): Promise<SendResult>;
  close(): Promise<void>;
}

// OpenSSL certificate verification results as Node reports them in error.code.
const CERT_VERIFY_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CRL_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERROR_IN_CRL_LAST_UPDATE_FIELD',
  'ERROR_IN_CRL_NEXT_UPDATE_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
]);

const DNS_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NODATA',
  'EAI_NONAME',
  'ENODATA',
  'ESERVFAIL',
  'ENONAME',
]);

/** Maps a transport failure to the attempt's error code; codes carry no URL by construction. */
export function transportErrorCode(error: unknown): SendErrorCode {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  if (name === 'TimeoutError' || code === 'ETIMEDOUT') return 'timeout';
  if (typeof code !== 'string') return 'network_error';
  if (code === BLOCKED_CODE) return 'blocked_address';
  if (code === PROXY_ERROR_CODE) return 'proxy_error';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection_reset';
  if (DNS_CODES.has(code)) return 'dns_error';
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code === 'EPROTO' || CERT_VERIFY_CODES.has(code)) {
    return 'tls_error';
  }
  return 'network_error';
}

function statusErrorCode(statusCode: number): SendErrorCode | null {
  if (statusCode >= 200 && statusCode < 300) return null;
  if (statusCode >= 300 && statusCode < 400) return 'redirect_refused';
  return `http_${statusCode}`;
}

function errnoError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

function lookupFamily(options: LookupOptions): 0 | 4 | 6 {
  const { family } = options;
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

/**
 * Resolves a host once and refuses it if any answer is non-public; returns only the addresses it checked (in the
 * resolver's order), of `family` when one is asked for. An IP literal is checked as it is.
 */
async function resolveChecked(
  host: string,
  allow: CidrList,
  resolve: HostLookup,
  family: 0 | 4 | 6 = 0,
): Promise<string[]> {
  const resolved = isIP(host) === 0 ? await resolve(host) : [host];
  const blocked = findBlockedAddress(resolved, allow);
  if (blocked !== null) throw errnoError(BLOCKED_CODE, `destination address is not public (${blocked.range})`);
  const addresses = resolved.filter((address) => isIP(address) !== 0 && (family === 0 || isIP(address) === family));
  if (addresses.length === 0) throw errnoError('ENOTFOUND', 'host name resolves to no usable address');
  return addresses;
}

/**
 * A socket lookup that resolves once, refuses the host if any answer is non-public, and hands the
 * socket only the addresses it checked, so a rebinding resolver cannot swap in another between
 * check and connect.
 */
function checkedLookup(allow: CidrList, resolve: HostLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolveChecked(hostname, allow, resolve, lookupFamily(options)).then(
      (checked) => {
        const addresses: LookupAddress[] = checked.map((address) => ({ address, family: isIP(address) }));
        const first = addresses[0]!;
        if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}

/** Creates the only HTTP client allowed to reach webhook receivers; close() it on shutdown. */
export function createEgressClient(opts: EgressClientOptions): EgressClient {
  const ca = opts.extraCaPem === undefined ? {} : { ca: [...tls.rootCertificates, opts.extraCaPem] };
  // One TLS context per pool for its lifetime: building one from a CA list parses every root certificate (tens of
  // milliseconds of blocked event loop), which per connection would add up.
  const baseContext = tls.createSecureContext({ minVersion: 'TLSv1.2', ...ca });
  const resolve = opts.lookup ?? systemLookup;
  const dnsLookup = checkedLookup(opts.allow, resolve);
  const proxy = opts.proxyUrl ? parseProxyUrl(opts.proxyUrl) : null;

  /** A keep-alive pool of connections that all present the same client certificate (or none), and its got. */
  interface Pool {
    agent: Agent;
    http: Got;
  }
  const retired = new Set<Agent>();

  function createPool(secureContext: tls.SecureContext): Pool {
    const agentOptions = {
      keepAlive: true,
      maxSockets: opts.maxSocketsPerOrigin ?? DEFAULT_MAX_SOCKETS_PER_ORIGIN,
      timeout: IDLE_SOCKET_MS,
      secureContext,
    };
    const agent = proxy
      ? new TunnelAgent(agentOptions, {
          proxy,
          // The same resolver and policy as a direct connection; the proxy is asked for the checked address only.
          resolve: (host) => resolveChecked(host, opts.allow, resolve),
          proxyContext: baseContext,
          // Within the request's timeout, so the tunnel's own verdict (proxy_error, or the destination's timeout) is
          // the one recorded rather than the request's.
          connectTimeoutMs: Math.max(1, Math.floor(opts.timeoutMs / 2)),
        })
      : new Agent(agentOptions);
    // Everything but the headers and body is fixed for the pool's lifetime, so got merges it once here instead of
    // per request. got hands Node its full option set (some 35 keys, most undefined), which Node's request and the
    // agent's pool key walk on every request; the request function passes on only what this client sets. Together
    // about a seventh less CPU per POST than per-request options (docs/delivery.md, step 5, "The request").
    const http = got.extend({
      throwHttpErrors: false,
      followRedirect: false,
      retry: { limit: 0 },
      timeout: { request: opts.timeoutMs },
      agent: { https: agent },
      dnsLookup,
      enableUnixSockets: false,
      request: (url: URL, native: RequestOptions) =>
        httpsRequest(url, {
          method: native.method,
          headers: native.headers,
          agent: native.agent,
          lookup: native.lookup,
        }),
    });
    return { agent, http };
  }

  const plain = createPool(baseContext);
  // Node's agent keys its pool by host and TLS options but not by secureContext: connections presenting different
  // client certificates must therefore live in different agents, never in one.
  const certified = new LRUCache<string, Pool>({
    max: CLIENT_CERTIFICATE_POOLS,
    dispose: (pool) => {
      // Requests may still run on its sockets: they end within the timeout, then the agent goes.
      retired.add(pool.agent);
      setTimeout(() => {
        retired.delete(pool.agent);
        pool.agent.destroy();
      }, opts.timeoutMs + IDLE_SOCKET_MS).unref();
    },
  });
  const identities = new WeakMap<ClientCertificate, string>();

  function poolFor(certificate: ClientCertificate | null | undefined): Pool {
    if (!certificate) return plain;
    let identity = identities.get(certificate);
    if (identity === undefined) {
      identity = clientCertificateIdentity(certificate);
      identities.set(certificate, identity);
    }
    let pool = certified.get(identity);
    if (pool === undefined) {
      pool = createPool(
        tls.createSecureContext({ minVersion: 'TLSv1.2', ...ca, cert: certificate.cert, key: certificate.key }),
      );
      certified.set(identity, pool);
    }
    return pool;
  }
  let closed = false;

  /**
   * One POST: its result, and the first `keepBytes` of the response body as received. `timeoutMs` narrows the
   * client's timeout for this request only.
   */
  async function transmit(
    req: SendRequest,
    keepBytes: number,
    timeoutMs?: number,
  ): Promise<{ result: SendResult; kept: Buffer }> {
    if (closed) throw new Error('egress client is closed');
    const started = performance.now();
    const result = (statusCode: number, error: SendErrorCode | null, response?: Response, snippet = ''): SendResult => {
      const retryAfter = response?.headers['retry-after'];
      return {
        statusCode,
        error,
        durationMs: Math.round(performance.now() - started),
        responseSnippet: snippet,
        retryAfter: retryAfter === undefined ? null : sanitiseText(retryAfter, MAX_RETRY_AFTER_LENGTH),
        ...(response === undefined ? {} : { headers: response.headers }),
      };
    };

    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return { result: result(0, 'invalid_url'), kept: Buffer.alloc(0) };
    }
    if (url.protocol !== 'https:') return { result: result(0, 'not_https'), kept: Buffer.alloc(0) };
    // Sockets skip the lookup for IP literals, so those are checked here instead.
    const host = hostOf(url);
    if (isIP(host) !== 0 && !classifyAddress(host, opts.allow).allowed)
      return { result: result(0, 'blocked_address'), kept: Buffer.alloc(0) };

    return new Promise<{ result: SendResult; kept: Buffer }>((resolve) => {
      let stream: ReturnType<Got['stream']>;
      try {
        const timeout = timeoutMs === undefined ? {} : { timeout: { request: timeoutMs } };
        stream = poolFor(req.clientCertificate).http.stream.post(url, {
          headers: { ...req.headers, 'user-agent': opts.userAgent },
          body: req.body,
          ...timeout,
        });
      } catch {
        // A stored certificate that no longer makes a TLS context (checked on save, so this should not occur).
        resolve({ result: result(0, 'tls_error'), kept: Buffer.alloc(0) });
        return;
      }

      let response: Response | undefined;
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let receivedBytes = 0;
      let settled = false;
      const finish = (error: SendErrorCode | null) => {
        if (settled) return;
        settled = true;
        // A receiver may answer anything (a GIF, protobuf): the snippet is stored, so it must be storable text.
        const body = Buffer.concat(kept);
        const snippet = sanitiseText(body.subarray(0, SNIPPET_BYTES));
        resolve({ result: result(response?.statusCode ?? 0, error, response, snippet), kept: body });
      };

      stream.on('response', (res: Response) => {
        response = res;
      });
      stream.on('data', (chunk: Buffer) => {
        receivedBytes += chunk.length;
        if (keptBytes < keepBytes) {
          const part = chunk.subarray(0, keepBytes - keptBytes);
          kept.push(part);
          keptBytes += part.length;
        }
        if (receivedBytes > MAX_RESPONSE_BYTES) {
          finish(statusErrorCode(response?.statusCode ?? 0));
          stream.destroy();
        }
      });
      stream.on('end', () => finish(statusErrorCode(response?.statusCode ?? 0)));
      stream.on('error', (error) => finish(transportErrorCode(error)));
    });
  }

  // OAuth 2.0 token requests go out like deliveries (address policy at connect, proxy, TLS, no redirects, timeout),
  // and their whole answer (up to MAX_RESPONSE_BYTES) is read.
  const tokens = new DestinationTokens(async (request) => {
    const { result, kept } = await transmit(request, MAX_RESPONSE_BYTES);
    return {
      statusCode: result.statusCode,
      error: result.error,
      ...(result.headers ? { headers: result.headers } : {}),
      body: kept,
    };
  }, opts.onTokenFetch);

  /**
   * Sends with the destination's access token when the request carries `auth` (CONTRACT 20): a token that cannot
   * be had fails the request without calling the receiver; a 401 drops the token so the next request fetches one.
   */
  async function send(req: SendRequest): Promise<SendResult> {
    if (!req.auth) return (await transmit(req, SNIPPET_BYTES)).result;
    const started = performance.now();
    const token = await tokens.token(req.auth);
    const waitedMs = performance.now() - started;
    if (!token.ok) {
      return {
        statusCode: 0,
        error: `auth_failed: ${token.reason}`,
        durationMs: Math.round(waitedMs),
        responseSnippet: '',
        retryAfter: null,
      };
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (name.toLowerCase() !== 'authorization') headers[name] = value;
    headers.authorization = `Bearer ${token.accessToken}`;
    // A fetched token took part of the attempt's time; the receiver has the rest of it.
    const remaining = token.fetched ? Math.max(1, Math.round(opts.timeoutMs - waitedMs)) : undefined;
    const { result } = await transmit({ ...req, headers }, SNIPPET_BYTES, remaining);
    if (result.statusCode === 401) tokens.drop(req.auth.cacheKey, token.accessToken);
    return { ...result, durationMs: result.durationMs + Math.round(waitedMs) };
  }

  async function close(): Promise<void> {
    closed = true;
    plain.agent.destroy();
    for (const pool of certified.values()) pool.agent.destroy();
    certified.clear();
    for (const agent of retired) agent.destroy();
    retired.clear();
  }

  return { send, close };
}
