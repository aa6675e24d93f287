import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent, request as httpsRequest, type AgentOptions, type RequestOptions } from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';

/** Error code of a failure of the proxy itself (unreachable, TLS to it, CONNECT refused by its own policy or 407). */
export const PROXY_ERROR_CODE = 'EGRESS_PROXY_ERROR';

/**
 * What a proxy's answer to CONNECT says about the destination, as the errno a direct connection would have seen.
 * Squid and Envoy answer 502 or 503 when the destination refuses or resets the connection, and 504 when it does
 * not answer in time: those are the receiver's failures, not the proxy's. Any other non-2xx (403 by policy, 407,
 * 400) is the proxy's.
 */
export const DESTINATION_FAILURE_STATUS: Readonly<Record<number, 'ECONNREFUSED' | 'ETIMEDOUT'>> = {
  502: 'ECONNREFUSED',
  503: 'ECONNREFUSED',
  504: 'ETIMEDOUT',
};

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
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error('EGRESS_PROXY_URL must use http:// or https://');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  return {
    protocol: url.protocol,
    host,
    port: url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port),
    authorization:
      user === '' && password === '' ? null : `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  };
}

function tunnelError(message: string, code: string = PROXY_ERROR_CODE): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
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
  /**
   * Longest wait for the proxy to answer CONNECT. Past it, a proxy that was never reached is a proxy error; one that
   * took the CONNECT and is still waiting for the destination is the destination's timeout.
   */
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

  override createConnection(
    options: RequestOptions,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
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
    if (address === undefined)
      throw Object.assign(new Error('host name resolves to no usable address'), { code: 'ENOTFOUND' });
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

  /**
   * Opens a tunnel through the proxy to `address:port`. A failure to reach or speak to the proxy is a proxy error; a
   * CONNECT the proxy took but could not complete for the destination's sake (DESTINATION_FAILURE_STATUS, or no
   * answer in time) fails with the errno a direct connection would have, so it counts against the receiver.
   */
  private connect(address: string, port: number): Promise<Socket> {
    const { proxy, proxyContext, connectTimeoutMs } = this.tunnel;
    const target = authority(address, port);
    const headers: Record<string, string> = { host: target };
    if (proxy.authorization !== null) headers['proxy-authorization'] = proxy.authorization;
    return new Promise<Socket>((resolve, reject) => {
      let settled = false;
      // Set once the proxy's connection (and TLS to an https:// proxy) is up and the CONNECT is on its way.
      let reached = false;
      const fail = (message: string, code?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        reject(tunnelError(message, code));
      };
      const common = {
        host: proxy.host,
        port: proxy.port,
        method: 'CONNECT',
        path: target,
        headers,
        agent: false as const,
      };
      const req: ClientRequest =
        proxy.protocol === 'https:'
          ? httpsRequest({
              ...common,
              secureContext: proxyContext,
              ...(isIP(proxy.host) === 0 ? { servername: proxy.host } : {}),
            } as RequestOptions)
          : httpRequest(common);
      const timer = setTimeout(
        () =>
          reached
            ? fail('destination did not answer the proxy in time', 'ETIMEDOUT')
            : fail('proxy could not be reached in time'),
        connectTimeoutMs,
      );
      req.on('socket', (socket: Socket) => {
        socket.once(proxy.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
          reached = true;
        });
      });
      req.on('error', (error: NodeJS.ErrnoException) =>
        fail(`proxy unreachable${error.code ? ` (${error.code})` : ''}`),
      );
      req.on('response', (res: IncomingMessage) => {
        res.resume();
        fail(`proxy answered CONNECT with a non-tunnel response (${res.statusCode ?? 0})`);
      });
      req.on('connect', (res: IncomingMessage, socket: Socket, head: Buffer) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          socket.destroy();
          const destinationCode = DESTINATION_FAILURE_STATUS[status];
          if (destinationCode !== undefined) fail(`proxy could not reach the destination (${status})`, destinationCode);
          else fail(`proxy refused CONNECT (${status})`);
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
