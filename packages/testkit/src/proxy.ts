import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';

/** One CONNECT request as the proxy saw it. */
export interface ConnectRequest {
  /** The request target, `host:port` (`[v6]:port`), exactly as asked. */
  target: string;
  /** The Proxy-Authorization header, if any. */
  authorization: string | undefined;
  /** What the proxy answered. */
  status: number;
  at: number;
}

export interface TestProxy {
  /** http://[user:pass@]127.0.0.1:<port> (https:// with `tls`) */
  url: string;
  port: number;
  requests: ConnectRequest[];
  /** Answer every CONNECT with this status instead of tunnelling (e.g. 403 or 502); null: tunnel. */
  refuseWith(status: number | null): void;
  close(): Promise<void>;
}

/**
 * A real HTTP CONNECT proxy on 127.0.0.1 that records every CONNECT it is asked for and tunnels it. It never resolves
 * a name: a target that is not an IP address is refused with 400, so a client that lets the proxy resolve shows up.
 * With `credentials` it demands Basic proxy authentication (407 otherwise).
 */
export async function startProxy(
  options: { credentials?: { user: string; password: string }; tls?: { key: string; cert: string } } = {},
): Promise<TestProxy> {
  const requests: ConnectRequest[] = [];
  const sockets = new Set<Socket>();
  let refusal: number | null = null;
  const expected = options.credentials
    ? `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString('base64')}`
    : undefined;

  const refuse = (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(405).end();
  };
  // With `tls` the client speaks TLS to the proxy itself (an https:// proxy URL), then CONNECT inside it.
  const server: Server = options.tls
    ? createTlsServer({ key: options.tls.key, cert: options.tls.cert }, refuse)
    : createServer(refuse);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    const authorization = req.headers['proxy-authorization'];
    const answer = (status: number) => {
      requests.push({ target, authorization, status, at: Date.now() });
      client.end(
        `HTTP/1.1 ${status} ${status === 407 ? 'Proxy Authentication Required' : 'Refused'}\r\n${status === 407 ? 'Proxy-Authenticate: Basic\r\n' : ''}Content-Length: 0\r\n\r\n`,
      );
    };
    client.on('error', () => undefined);
    if (expected !== undefined && authorization !== expected) return answer(407);
    if (refusal !== null) return answer(refusal);
    const match = /^\[?([0-9a-fA-F.:]+)\]?:(\d+)$/.exec(target);
    if (!match) return answer(400);
    const upstream = connect({ host: match[1]!, port: Number(match[2]) });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    let tunnelled = false;
    upstream.on('error', () => {
      if (tunnelled) client.destroy();
      else answer(502);
    });
    upstream.on('connect', () => {
      tunnelled = true;
      requests.push({ target, authorization, status: 200, at: Date.now() });
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const auth = options.credentials
    ? `${encodeURIComponent(options.credentials.user)}:${encodeURIComponent(options.credentials.password)}@`
    : '';
  return {
    url: `${options.tls ? 'https' : 'http'}://${auth}127.0.0.1:${port}`,
    port,
    requests,
    refuseWith(status) {
      refusal = status;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
