import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import tls from 'node:tls';
import { createPki } from '@gatehook/testkit/pki';
import { parseCidrList, type HostLookup } from '@gatehook/egress/address-policy';
import {
  createEgressClient,
  MAX_RESPONSE_BYTES,
  SNIPPET_BYTES,
  transportErrorCode,
  type EgressClient,
  type EgressClientOptions,
} from '@gatehook/egress/client';

const TEST_NAME = 'receiver.gatehook.test';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  remoteAddress: string | undefined;
}

interface Receiver {
  origin: string;
  port: number;
  /** TCP connections accepted, TLS handshake or not. */
  connections: () => number;
  requests: Received[];
  close: () => Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const pki = createPki([TEST_NAME]);
const servers: Server[] = [];
const clients: EgressClient[] = [];

async function startReceiver(handler: Handler, tlsOptions: tls.TlsOptions = {}): Promise<Receiver> {
  const requests: Received[] = [];
  let connections = 0;
  const server = createServer({ key: pki.keyPem, cert: pki.certPem, ...tlsOptions }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        remoteAddress: req.socket.remoteAddress,
      });
      handler(req, res);
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  // A rejected handshake is the expected outcome of several tests, not a server failure.
  server.on('tlsClientError', () => {});
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://127.0.0.1:${port}`,
    port,
    connections: () => connections,
    requests,
    close: () => closeServer(server),
  };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function client(overrides: Partial<EgressClientOptions> = {}): EgressClient {
  const created = createEgressClient({
    allow: parseCidrList('127.0.0.1/32'),
    extraCaPem: pki.caPem,
    timeoutMs: 5_000,
    userAgent: 'Gatehook-Webhooks/test',
    ...overrides,
  });
  clients.push(created);
  return created;
}

const post = { headers: { 'content-type': 'application/json' }, body: '{"type":"webhook.test"}' };

let receiver: Receiver;
let redirectTarget: Receiver;

beforeAll(async () => {
  redirectTarget = await startReceiver((_req, res) => res.end('followed'));
  receiver = await startReceiver((req, res) => {
    switch (req.url) {
      case '/ok':
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
        break;
      case '/accepted':
        res.writeHead(202).end();
        break;
      case '/500':
        res.writeHead(500).end('internal trouble');
        break;
      case '/410':
        res.writeHead(410).end('gone for good');
        break;
      case '/429':
        res.writeHead(429, { 'retry-after': '120' }).end('slow down');
        break;
      case '/503-date':
        res.writeHead(503, { 'retry-after': 'Wed, 21 Oct 2037 07:28:00 GMT' }).end();
        break;
      case '/302':
        res.writeHead(302, { location: `${redirectTarget.origin}/followed` }).end('moved');
        break;
      case '/307-same':
        res.writeHead(307, { location: '/ok' }).end();
        break;
      case '/binary':
        res
          .writeHead(200, { 'content-type': 'image/gif' })
          .end(Buffer.from([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0, 0, 0xff, 0xd8, 0x00, 0x01]));
        break;
      case '/utf8':
        // 1 + 2 × 600 bytes: byte 1024 falls inside a two-byte character
        res.writeHead(200).end(`a${'é'.repeat(600)}`);
        break;
      default:
        res.writeHead(404).end();
    }
  });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => closeServer(s)));
});

describe('responses', () => {
  it('sends a POST with the body, headers and user-agent and keeps a 2xx body as snippet', async () => {
    const result = await client().send({
      url: `${receiver.origin}/ok`,
      headers: { ...post.headers, 'webhook-id': 'msg_1', 'user-agent': 'spoofed' },
      body: post.body,
    });
    expect(result).toMatchObject({
      statusCode: 200,
      error: null,
      responseSnippet: '{"received":true}',
      retryAfter: null,
    });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(result.headers?.['content-type']).toBe('application/json');
    const seen = receiver.requests.find((r) => r.headers['webhook-id'] === 'msg_1');
    expect(seen).toMatchObject({ method: 'POST', url: '/ok', body: post.body });
    expect(seen?.headers['user-agent']).toBe('Gatehook-Webhooks/test');
    expect(seen?.headers['content-type']).toBe('application/json');
  });

  it('sends a Buffer body and accepts any 2xx', async () => {
    const result = await client().send({ url: `${receiver.origin}/accepted`, headers: {}, body: Buffer.from('[1,2]') });
    expect(result).toMatchObject({ statusCode: 202, error: null, responseSnippet: '' });
  });

  it.each([
    ['/500', 500, 'http_500', 'internal trouble'],
    ['/410', 410, 'http_410', 'gone for good'],
    ['/404', 404, 'http_404', ''],
  ])('reports %s as %s', async (path, statusCode, error, snippet) => {
    const result = await client().send({ url: `${receiver.origin}${path}`, ...post });
    expect(result).toMatchObject({ statusCode, error, responseSnippet: snippet, retryAfter: null });
  });

  it('surfaces Retry-After of a 429 raw', async () => {
    const result = await client().send({ url: `${receiver.origin}/429`, ...post });
    expect(result).toMatchObject({
      statusCode: 429,
      error: 'http_429',
      retryAfter: '120',
      responseSnippet: 'slow down',
    });
  });

  it('surfaces an HTTP-date Retry-After unparsed', async () => {
    const result = await client().send({ url: `${receiver.origin}/503-date`, ...post });
    expect(result).toMatchObject({ statusCode: 503, error: 'http_503', retryAfter: 'Wed, 21 Oct 2037 07:28:00 GMT' });
  });

  it('refuses a redirect without requesting its target', async () => {
    const result = await client().send({ url: `${receiver.origin}/302`, ...post });
    expect(result).toMatchObject({ statusCode: 302, error: 'redirect_refused', responseSnippet: 'moved' });
    expect(redirectTarget.connections()).toBe(0);
  });

  it('refuses a same-origin redirect', async () => {
    const before = receiver.requests.filter((r) => r.url === '/ok').length;
    const result = await client().send({ url: `${receiver.origin}/307-same`, ...post });
    expect(result).toMatchObject({ statusCode: 307, error: 'redirect_refused' });
    expect(receiver.requests.filter((r) => r.url === '/ok')).toHaveLength(before);
  });

  it('keeps a binary 200 body as a storable snippet: no NUL, valid UTF-8', async () => {
    const result = await client().send({ url: `${receiver.origin}/binary`, ...post });
    expect(result.statusCode).toBe(200);
    expect(result.responseSnippet.startsWith('GIF89a')).toBe(true);
    expect(result.responseSnippet).not.toContain('\u0000');
    expect(result.responseSnippet).toBe(Buffer.from(result.responseSnippet, 'utf8').toString('utf8'));
  });

  it('cuts the snippet at a character boundary', async () => {
    const result = await client().send({ url: `${receiver.origin}/utf8`, ...post });
    expect(result.responseSnippet).toBe(`a${'é'.repeat(511)}`);
  });
});

describe('oversized response', () => {
  it('reads at most 64 KB, keeps 1 KB and drops the connection', async () => {
    const total = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(256 * 1024, 'x');
    chunk.write('BEGIN');
    let bytesWritten = 0;
    let finished = false;
    let responseClosed!: () => void;
    const closed = new Promise<void>((resolve) => {
      responseClosed = resolve;
    });
    const big = await startReceiver((_req, res) => {
      res.writeHead(200);
      res.on('close', responseClosed);
      res.on('finish', () => {
        finished = true;
      });
      // Far more than socket buffers can absorb, written with back-pressure: only an abort ends it early.
      const write = () => {
        while (bytesWritten < total) {
          bytesWritten += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', write);
            return;
          }
        }
        res.end();
      };
      write();
    });

    const result = await client().send({ url: `${big.origin}/big`, ...post });
    expect(result).toMatchObject({ statusCode: 200, error: null });
    expect(Buffer.byteLength(result.responseSnippet)).toBe(SNIPPET_BYTES);
    expect(result.responseSnippet.startsWith('BEGINxxx')).toBe(true);
    await closed;
    expect(finished).toBe(false);
    expect(bytesWritten).toBeLessThan(total);
    expect(MAX_RESPONSE_BYTES).toBe(64 * 1024);
  });
});

describe('transport failures', () => {
  it('times out on a receiver that never answers', async () => {
    const silent = await startReceiver(() => {});
    const result = await client({ timeoutMs: 300 }).send({ url: `${silent.origin}/`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'timeout', responseSnippet: '', retryAfter: null });
    expect(result.durationMs).toBeGreaterThanOrEqual(250);
    expect(result.durationMs).toBeLessThan(5_000);
    expect(silent.requests).toHaveLength(1);
  });

  it('times out on a TCP peer that never starts TLS', async () => {
    const sockets: Socket[] = [];
    const mute = createNetServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = mute.address() as AddressInfo;
      const result = await client({ timeoutMs: 300 }).send({ url: `https://127.0.0.1:${port}/`, ...post });
      expect(result).toMatchObject({ statusCode: 0, error: 'timeout' });
    } finally {
      sockets.forEach((s) => s.destroy());
      await new Promise<void>((resolve) => mute.close(() => resolve()));
    }
  });

  it('reports a closed port as connection_refused', async () => {
    const gone = await startReceiver(() => {});
    await gone.close();
    const result = await client().send({ url: `${gone.origin}/`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'connection_refused' });
  });

  it('reports a peer that hangs up as connection_reset', async () => {
    const rude = await startReceiver((req) => req.socket.destroy());
    const result = await client().send({ url: `${rude.origin}/`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'connection_reset' });
  });

  it('rejects a certificate from an untrusted CA', async () => {
    const result = await client({ extraCaPem: undefined }).send({ url: `${receiver.origin}/ok`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'tls_error' });
  });

  it('verifies the certificate against the host name, not the connected IP', async () => {
    const lookup: HostLookup = async () => ['127.0.0.1'];
    const result = await client({ lookup }).send({ url: `https://wrong.gatehook.test:${receiver.port}/ok`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'tls_error' });
  });

  it('refuses a receiver that only speaks TLS 1.1', async () => {
    const legacyOptions = { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' } as const;
    const legacy = await startReceiver((_req, res) => res.end('ok'), legacyOptions);
    // Control: the receiver does serve a client that accepts TLS 1.1, so the refusal below is ours.
    const protocol = await new Promise<string | null>((resolve, reject) => {
      const socket = tls.connect(
        {
          host: '127.0.0.1',
          port: legacy.port,
          ca: pki.caPem,
          servername: 'localhost',
          ...legacyOptions,
          maxVersion: 'TLSv1.3',
        },
        () => {
          resolve(socket.getProtocol());
          socket.destroy();
        },
      );
      socket.on('error', reject);
    });
    expect(protocol).toBe('TLSv1.1');

    const result = await client().send({ url: `${legacy.origin}/`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'tls_error' });
    expect(legacy.requests).toHaveLength(0);
  });

  it('reports a resolver failure as dns_error', async () => {
    const lookup: HostLookup = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    const result = await client({ lookup }).send({ url: `https://${TEST_NAME}:${receiver.port}/ok`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'dns_error' });
  });

  it('resolves a real non-existent name to dns_error', async () => {
    const result = await client().send({ url: 'https://gatehook-egress.invalid/', ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'dns_error' });
  });

  it.each([
    ['not a url', 'invalid_url'],
    ['http://127.0.0.1/', 'not_https'],
  ])('refuses %s as %s without sending', async (url, error) => {
    await expect(client().send({ url, ...post })).resolves.toMatchObject({ statusCode: 0, error });
  });

  it('never puts the URL in an error', async () => {
    const result = await client({ allow: [] }).send({ url: `${receiver.origin}/s3cr3t?token=s3cr3t`, ...post });
    expect(JSON.stringify(result)).not.toContain('s3cr3t');
  });
});

describe('address policy at connection time', () => {
  // Each test has its own receiver, so "received nothing" is about that test alone.
  const guardedReceiver = () => startReceiver((_req, res) => res.end('should not be reached'));

  it('refuses an IP literal outside the allow list before connecting', async () => {
    const guarded = await guardedReceiver();
    const result = await client({ allow: [] }).send({ url: `${guarded.origin}/`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'blocked_address', responseSnippet: '' });
    expect(guarded.connections()).toBe(0);
  });

  it('refuses a name that resolves to a blocked address (DNS rebinding)', async () => {
    // The name passed the policy when the webhook was saved; at send time it points inside.
    const guarded = await guardedReceiver();
    const lookup: HostLookup = async () => ['127.0.0.1'];
    const result = await client({ allow: [], lookup }).send({ url: `https://${TEST_NAME}:${guarded.port}/`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'blocked_address' });
    expect(guarded.connections()).toBe(0);
  });

  it('refuses a name when any one of its addresses is blocked', async () => {
    const guarded = await guardedReceiver();
    const lookup: HostLookup = async () => ['127.0.0.1', '10.0.0.1'];
    const result = await client({ lookup }).send({ url: `https://${TEST_NAME}:${guarded.port}/`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'blocked_address' });
    expect(guarded.connections()).toBe(0);
  });

  it('refuses an IPv4-mapped literal even when the IPv4 address is allowed', async () => {
    const guarded = await guardedReceiver();
    const result = await client().send({ url: `https://[::ffff:127.0.0.1]:${guarded.port}/`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'blocked_address' });
    expect(guarded.connections()).toBe(0);
  });
});

describe('host names', () => {
  it('connects a name to exactly the address its checked lookup returned', async () => {
    const lookup = jest.fn<Promise<string[]>, [string]>(async () => ['127.0.0.1']);
    const result = await client({ lookup }).send({
      url: `https://${TEST_NAME}:${receiver.port}/ok`,
      headers: { 'webhook-id': 'msg_pinned' },
      body: '{}',
    });
    expect(result).toMatchObject({ statusCode: 200, error: null });
    expect(lookup).toHaveBeenCalledWith(TEST_NAME);
    const seen = receiver.requests.find((r) => r.headers['webhook-id'] === 'msg_pinned');
    expect(seen?.headers.host).toBe(`${TEST_NAME}:${receiver.port}`);
    expect(seen?.remoteAddress).toBe('127.0.0.1');
  });

  it('resolves localhost through the system resolver and the address policy', async () => {
    const result = await client({ allow: parseCidrList('127.0.0.1/32,::1/128') }).send({
      url: `https://localhost:${receiver.port}/ok`,
      ...post,
    });
    expect(result).toMatchObject({ statusCode: 200, error: null });
  });

  it('refuses localhost when its addresses are not allowed', async () => {
    const result = await client({ allow: [] }).send({ url: `https://localhost:${receiver.port}/ok`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'blocked_address' });
  });
});

describe('connection reuse', () => {
  it('sends sequential requests over one kept-alive socket', async () => {
    const reused = await startReceiver((_req, res) => res.end('ok'));
    const c = client();
    await expect(c.send({ url: `${reused.origin}/a`, ...post })).resolves.toMatchObject({ statusCode: 200 });
    await expect(c.send({ url: `${reused.origin}/b`, ...post })).resolves.toMatchObject({ statusCode: 200 });
    expect(reused.requests).toHaveLength(2);
    expect(reused.connections()).toBe(1);
  });

  it('caps concurrent sockets per origin', async () => {
    const capped = await startReceiver((_req, res) => setTimeout(() => res.end('ok'), 50));
    const c = client({ maxSocketsPerOrigin: 1 });
    const results = await Promise.all([1, 2, 3].map((n) => c.send({ url: `${capped.origin}/${n}`, ...post })));
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(capped.connections()).toBe(1);
  });
});

describe('lifecycle', () => {
  it('close() can be called twice and refuses later sends', async () => {
    const c = client();
    await c.close();
    await c.close();
    await expect(c.send({ url: `${receiver.origin}/ok`, ...post })).rejects.toThrow('closed');
  });
});

describe('transportErrorCode', () => {
  it.each([
    [{ name: 'TimeoutError', code: 'ETIMEDOUT' }, 'timeout'],
    [{ code: 'ETIMEDOUT' }, 'timeout'],
    [{ code: 'ECONNREFUSED' }, 'connection_refused'],
    [{ code: 'ECONNRESET' }, 'connection_reset'],
    [{ code: 'EPIPE' }, 'connection_reset'],
    [{ code: 'EAI_AGAIN' }, 'dns_error'],
    [{ code: 'CERT_HAS_EXPIRED' }, 'tls_error'],
    [{ code: 'ERR_TLS_CERT_ALTNAME_INVALID' }, 'tls_error'],
    [{ code: 'ERR_SSL_WRONG_VERSION_NUMBER' }, 'tls_error'],
    [{ code: 'EHOSTUNREACH' }, 'network_error'],
    [new Error('boom'), 'network_error'],
    [undefined, 'network_error'],
  ])('%j → %s', (error, code) => {
    expect(transportErrorCode(error)).toBe(code);
  });
});
