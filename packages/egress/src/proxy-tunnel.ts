import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent, request as httpsRequest, type AgentOptions, type RequestOptions } from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';

/** Error code of a failure of the proxy itself (unreachable, CONNECT refused, tunnel gone before TLS). */
export const PROXY_ERROR_CODE = 'EGRESS_PROXY_ERROR';

/** An HTTP CONNECT proxy as EGRESS_PROXY_URL names it, parsed once. */
export interface ProxyTarget {
  protocol: 'http:' | 'https:';
  host: string;
  port: number;
  /** `Basic …` from the URL's user and password; never logged. */
  authorization: string | null;
}

/** Parses EGRESS_PROXY_URL; the error never quotes the URL, which may carry credentials. */
export function parseProxyUrl(text: string): ProxyTarget {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('EGRESS_PROXY_URL is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('EGRESS_PROXY_URL must use http:// or https://');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  return {
    protocol: url.protocol,
    host,
    port: url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port),
    authorization: user === '' && password === '' ? null : `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  };
}

function proxyError(message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code: PROXY_ERROR_CODE });
}

/** `host:port` of a CONNECT request line, IPv6 addresses in brackets. */
function authority(address: string, port: number): string {
  return isIP(address) === 6 ? `[${address}]:${port}` : `${address}:${port}`;
}

export interface TunnelOptions {
  proxy: ProxyTarget;
  /**
   * Resolves the destination host and checks every address against the address policy; the tunnel goes to the
   * first address it returns. IP literals are passed through it too.
   */
  resolve: (host: string) => Promise<string[]>;
  /** TLS context used to verify an https:// proxy (the client's trust store, no client certificate). */
  proxyContext: tls.SecureContext;
  /** Longest wait for the proxy to answer CONNECT. */
  connectTimeoutMs: number;
}

/**
 * A keep-alive HTTPS agent whose connections go through an HTTP CONNECT proxy. The destination is resolved and
 * checked here, by the same resolver and address policy as a direct connection, and the proxy is asked to CONNECT to
 * the checked IP address, never to the name: the proxy resolves nothing, so neither a private answer nor a rebinding
 * resolver gets past the policy. TLS to the receiver then runs over the tunnel with the receiver's name (SNI and
 * certificate verification for the host name) and the agent's context (trust store, client certificate).
 */
export class TunnelAgent extends Agent {
  constructor(
    agentOptions: AgentOptions,
    private readonly tunnel: TunnelOptions,
  ) {
    super(agentOptions);
  }

  override createConnection(options: RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    this.open(options).then(
      (socket) => callback?.(null, socket),
      (error: Error) => callback?.(error, undefined as unknown as Duplex),
    );
    return undefined;
  }

  private async open(options: RequestOptions): Promise<tls.TLSSocket> {
    const host = options.hostname ?? options.host ?? '';
    const port = Number(options.port ?? 443);
    // Policy and DNS failures keep their own codes: they are the destination's, not the proxy's.
    const [address] = await this.tunnel.resolve(host);
    if (address === undefined) throw Object.assign(new Error('host name resolves to no usable address'), { code: 'ENOTFOUND' });
    const socket = await this.connect(address, port);
    const servername = (options as tls.ConnectionOptions).servername;
    return tls.connect({
      socket,
      // Verification is for the name in the URL; the tunnel's address is only where the bytes go.
      host,
      ...(isIP(host) === 0 ? { servername: servername || host } : {}),
      secureContext: (options as tls.ConnectionOptions).secureContext,
      minVersion: 'TLSv1.2',
    });
  }

  /** Opens a tunnel through the proxy to `address:port`; every failure is a proxy error. */
  private connect(address: string, port: number): Promise<Socket> {
    const { proxy, proxyContext, connectTimeoutMs } = this.tunnel;
    const target = authority(address, port);
    const headers: Record<string, string> = { host: target };
    if (proxy.authorization !== null) headers['proxy-authorization'] = proxy.authorization;
    return new Promise<Socket>((resolve, reject) => {
      let settled = false;
      const fail = (message: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        reject(proxyError(message));
      };
      const common = { host: proxy.host, port: proxy.port, method: 'CONNECT', path: target, headers, agent: false as const };
      const req: ClientRequest =
        proxy.protocol === 'https:'
          ? httpsRequest({ ...common, secureContext: proxyContext, ...(isIP(proxy.host) === 0 ? { servername: proxy.host } : {}) } as RequestOptions)
          : httpRequest(common);
      const timer = setTimeout(() => fail('proxy did not answer CONNECT in time'), connectTimeoutMs);
      req.on('error', (error: NodeJS.ErrnoException) => fail(`proxy unreachable${error.code ? ` (${error.code})` : ''}`));
      req.on('response', (res: IncomingMessage) => {
        res.resume();
        fail(`proxy answered CONNECT with a non-tunnel response (${res.statusCode ?? 0})`);
      });
      req.on('connect', (res: IncomingMessage, socket: Socket, head: Buffer) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          socket.destroy();
          fail(`proxy refused CONNECT (${status})`);
          return;
        }
        if (settled) {
          socket.destroy();
          return;
        }
        settled = true;
        clearTimeout(timer);
        // A receiver speaks only after the client hello; anything already read belongs to the stream all the same.
        if (head.length > 0) socket.unshift(head);
        resolve(socket);
      });
      req.end();
    });
  }
}
