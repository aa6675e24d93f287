import { createServer, type Server } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { createPki } from '@gatehook/testkit/pki';
import { startProxy, type TestProxy } from '@gatehook/testkit/proxy';
import { parseCidrList, type HostLookup } from '@gatehook/egress/address-policy';
import { createEgressClient, type EgressClient, type EgressClientOptions } from '@gatehook/egress/client';
import { parseProxyUrl } from '@gatehook/egress/proxy-tunnel';

const NAME = 'receiver.gatehook.test';
const pki = createPki([NAME]);
const clients: EgressClient[] = [];
const post = { headers: { 'content-type': 'application/json' }, body: '{}' };

let receiver: Server;
let port: number;
let received: { host: string | undefined; remote: string | undefined }[] = [];

function client(proxy: TestProxy | string, overrides: Partial<EgressClientOptions> = {}): EgressClient {
  const created = createEgressClient({
    allow: parseCidrList('127.0.0.1/32'),
    extraCaPem: pki.caPem,
    timeoutMs: 3_000,
    userAgent: 'Gatehook-Webhooks/test',
    proxyUrl: typeof proxy === 'string' ? proxy : proxy.url,
    ...overrides,
  });
  clients.push(created);
  return created;
}

beforeAll(async () => {
  receiver = createServer({ key: pki.keyPem, cert: pki.certPem }, (req, res) => {
    req.resume();
    req.on('end', () => {
      received.push({ host: req.headers.host, remote: req.socket.remoteAddress });
      res.end('ok');
    });
  });
  receiver.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  port = (receiver.address() as AddressInfo).port;
});

beforeEach(() => {
  received = [];
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
});

describe('through a CONNECT proxy', () => {
  it('resolves and checks the name itself and asks the proxy for the checked address, TLS to the name', async () => {
    const proxy = await startProxy();
    const lookup = jest.fn<Promise<string[]>, [string]>(async () => ['127.0.0.1']);
    const result = await client(proxy, { lookup }).send({ url: `https://${NAME}:${port}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 200, error: null, responseSnippet: 'ok' });
    expect(lookup).toHaveBeenCalledWith(NAME);
    expect(proxy.requests.map((r) => r.target)).toEqual([`127.0.0.1:${port}`]);
    expect(received).toEqual([{ host: `${NAME}:${port}`, remote: '127.0.0.1' }]);
    await proxy.close();
  });

  it('sends an IP literal URL through the proxy too', async () => {
    const proxy = await startProxy();
    const result = await client(proxy).send({ url: `https://127.0.0.1:${port}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 200, error: null });
    expect(proxy.requests.map((r) => r.target)).toEqual([`127.0.0.1:${port}`]);
    await proxy.close();
  });

  it('keeps the tunnel alive for the next request to the same host', async () => {
    const proxy = await startProxy();
    const c = client(proxy);
    for (let i = 0; i < 3; i += 1)
      expect((await c.send({ url: `https://127.0.0.1:${port}/hook`, ...post })).statusCode).toBe(200);
    expect(proxy.requests).toHaveLength(1);
    await proxy.close();
  });

  it('never asks the proxy for a name that resolves to a private address', async () => {
    const proxy = await startProxy();
    const lookup: HostLookup = async () => ['10.0.0.7'];
    const result = await client(proxy, { lookup }).send({ url: `https://${NAME}:${port}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'blocked_address' });
    expect(proxy.requests).toEqual([]);
    await proxy.close();
  });

  it('never asks the proxy for a rebinding name that turns private after passing', async () => {
    const proxy = await startProxy();
    // Public (allowed) on the first look, private on the next: each connection checks what it is given.
    const answers = [['127.0.0.1'], ['169.254.169.254'], ['127.0.0.1', '10.1.2.3']];
    let calls = 0;
    const lookup: HostLookup = async () => answers[Math.min(calls++, answers.length - 1)]!;
    const c = client(proxy, { lookup, maxSocketsPerOrigin: 1 });
    expect((await c.send({ url: `https://${NAME}:${port}/a`, ...post })).statusCode).toBe(200);
    // Other ports of the same name force new connections, so new lookups.
    expect(await c.send({ url: `https://${NAME}:${port + 1}/b`, ...post })).toMatchObject({ error: 'blocked_address' });
    expect(await c.send({ url: `https://${NAME}:${port + 2}/c`, ...post })).toMatchObject({ error: 'blocked_address' });
    expect(proxy.requests.map((r) => r.target)).toEqual([`127.0.0.1:${port}`]);
    await proxy.close();
  });

  it('refuses an IP literal outside the allow list before the proxy sees anything', async () => {
    const proxy = await startProxy();
    const result = await client(proxy, { allow: [] }).send({ url: `https://127.0.0.1:${port}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'blocked_address' });
    expect(proxy.requests).toEqual([]);
    await proxy.close();
  });

  it('verifies the receiver certificate for the URL name, not the tunnelled address', async () => {
    const proxy = await startProxy();
    const lookup: HostLookup = async () => ['127.0.0.1'];
    const result = await client(proxy, { lookup }).send({ url: `https://wrong.gatehook.test:${port}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'tls_error' });
    expect(received).toEqual([]);
    await proxy.close();
  });

  it('speaks TLS to an https:// proxy, verified with the client trust store', async () => {
    const proxy = await startProxy({ tls: { key: pki.keyPem, cert: pki.certPem } });
    expect(proxy.url).toMatch(/^https:/);
    expect(await client(proxy).send({ url: `https://127.0.0.1:${port}/hook`, ...post })).toMatchObject({
      statusCode: 200,
      error: null,
    });
    expect(proxy.requests.map((r) => r.target)).toEqual([`127.0.0.1:${port}`]);
    // A proxy whose certificate the client does not trust is a proxy_error, and no tunnel is asked for.
    const untrusted = createPki();
    const stranger = await startProxy({ tls: { key: untrusted.keyPem, cert: untrusted.certPem } });
    expect(await client(stranger).send({ url: `https://127.0.0.1:${port}/hook`, ...post })).toMatchObject({
      statusCode: 0,
      error: 'proxy_error',
    });
    expect(stranger.requests).toEqual([]);
    await Promise.all([proxy.close(), stranger.close()]);
  });

  it('sends the URL credentials as Proxy-Authorization', async () => {
    const proxy = await startProxy({ credentials: { user: 'gate', password: 'p@ss:word' } });
    const result = await client(proxy).send({ url: `https://127.0.0.1:${port}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 200, error: null });
    expect(proxy.requests[0]?.authorization).toBe(`Basic ${Buffer.from('gate:p@ss:word').toString('base64')}`);
    await proxy.close();
  });
});

describe('a proxy that fails', () => {
  it('is proxy_error when it refuses connections', async () => {
    const proxy = await startProxy();
    await proxy.close();
    const result = await client(proxy).send({ url: `https://127.0.0.1:${port}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'proxy_error' });
    expect(received).toEqual([]);
  });

  it('is proxy_error when CONNECT is refused by the proxy itself (403, 400)', async () => {
    const proxy = await startProxy();
    for (const status of [403, 400]) {
      proxy.refuseWith(status);
      expect(await client(proxy).send({ url: `https://127.0.0.1:${port}/hook`, ...post })).toMatchObject({
        statusCode: 0,
        error: 'proxy_error',
      });
    }
    await proxy.close();
  });

  it('is proxy_error when the credentials are refused (407), and the error carries no credential', async () => {
    const proxy = await startProxy({ credentials: { user: 'gate', password: 'right' } });
    const wrong = proxy.url.replace('right', 'wrong');
    const result = await client(wrong).send({ url: `https://127.0.0.1:${port}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'proxy_error' });
    expect(JSON.stringify(result)).not.toContain('wrong');
    await proxy.close();
  });

  it('is proxy_error when TLS to an https:// proxy never completes', async () => {
    const silent = await startSilentServer();
    const result = await client(`https://127.0.0.1:${silent.port}`, { timeoutMs: 500 }).send({
      url: `https://127.0.0.1:${port}/hook`,
      ...post,
    });
    expect(result).toMatchObject({ statusCode: 0, error: 'proxy_error' });
    await silent.close();
  });
});

describe('a destination that fails behind the proxy', () => {
  it('is connection_refused when the receiver refuses the proxy (the proxy answers 502)', async () => {
    const proxy = await startProxy();
    const closed = createNetServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const result = await client(proxy).send({ url: `https://127.0.0.1:${closedPort}/hook`, ...post });
    expect(result).toMatchObject({ statusCode: 0, error: 'connection_refused' });
    expect(proxy.requests).toEqual([expect.objectContaining({ target: `127.0.0.1:${closedPort}`, status: 502 })]);
    await proxy.close();
  });

  it("maps the proxy's 502 and 503 to connection_refused and 504 to timeout, as Squid and Envoy answer them", async () => {
    const proxy = await startProxy();
    const answered: Record<number, string | null> = {};
    for (const status of [502, 503, 504]) {
      proxy.refuseWith(status);
      answered[status] = (await client(proxy).send({ url: `https://127.0.0.1:${port}/hook`, ...post })).error;
    }
    expect(answered).toEqual({ 502: 'connection_refused', 503: 'connection_refused', 504: 'timeout' });
    expect(received).toEqual([]);
    await proxy.close();
  });

  it('is timeout when the proxy takes the CONNECT and never answers it (waiting on the destination)', async () => {
    const silent = await startSilentServer();
    const result = await client(`http://127.0.0.1:${silent.port}`, { timeoutMs: 500 }).send({
      url: `https://127.0.0.1:${port}/hook`,
      ...post,
    });
    expect(result).toMatchObject({ statusCode: 0, error: 'timeout' });
    await silent.close();
  });
});

/** A TCP server on 127.0.0.1 that accepts connections and never says a word. */
async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const held = new Set<Socket>();
  const server = createNetServer((socket) => {
    held.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('parseProxyUrl', () => {
  it('takes credentials apart and defaults the port', () => {
    expect(parseProxyUrl('http://u%40x:p%3Aw@proxy.internal')).toEqual({
      protocol: 'http:',
      host: 'proxy.internal',
      port: 80,
      authorization: `Basic ${Buffer.from('u@x:p:w').toString('base64')}`,
    });
    expect(parseProxyUrl('https://[fd00::1]:8443')).toMatchObject({
      protocol: 'https:',
      host: 'fd00::1',
      port: 8443,
      authorization: null,
    });
  });

  it('never quotes the URL in its errors', () => {
    expect(() => parseProxyUrl('socks5://user:secret@proxy')).toThrow(/^EGRESS_PROXY_URL must use http/);
    expect(() => parseProxyUrl('::secret::')).toThrow('EGRESS_PROXY_URL is not a valid URL');
  });
});
