import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { createClientCa, createPki, selfSignedWithKey } from '@gatehook/testkit/pki';
import { startProxy } from '@gatehook/testkit/proxy';
import { parseCidrList } from '@gatehook/egress/address-policy';
import { createEgressClient, type EgressClient, type EgressClientOptions } from '@gatehook/egress/client';
import { clientCertificateIdentity, inspectClientCertificate } from '@gatehook/egress/client-certificate';

const pki = createPki();
const trusted = createClientCa('trusted client CA');
const stranger = createClientCa('unknown client CA');
const good = trusted.issue({ commonName: 'webhook-a' });
const other = trusted.issue({ commonName: 'webhook-b' });
const foreign = stranger.issue({ commonName: 'webhook-c' });
const post = { headers: { 'content-type': 'application/json' }, body: '{}' };
const clients: EgressClient[] = [];

let receiver: Server;
let url: string;
const seen: (string | null)[] = [];

function client(overrides: Partial<EgressClientOptions> = {}): EgressClient {
  const created = createEgressClient({
    allow: parseCidrList('127.0.0.1/32'),
    extraCaPem: pki.caPem,
    timeoutMs: 3_000,
    userAgent: 'test',
    ...overrides,
  });
  clients.push(created);
  return created;
}

beforeAll(async () => {
  // A receiver that requires a client certificate of the trusted CA and records whose it was.
  receiver = createServer(
    { key: pki.keyPem, cert: pki.certPem, ca: trusted.caPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      seen.push(typeof peer.subject?.CN === 'string' ? peer.subject.CN : null);
      req.resume();
      req.on('end', () => res.end('hello'));
    },
  );
  receiver.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
});

describe('mTLS', () => {
  it('presents the right certificate, and the receiver accepts it', async () => {
    const result = await client().send({ url, ...post, clientCertificate: { cert: good.certPem, key: good.keyPem } });
    expect(result).toMatchObject({ statusCode: 200, error: null, responseSnippet: 'hello' });
    expect(seen.at(-1)).toBe('webhook-a');
  });

  it('is refused without a certificate', async () => {
    const result = await client().send({ url, ...post });
    expect(result.statusCode).toBe(0);
    expect(['tls_error', 'connection_reset']).toContain(result.error);
  });

  it('is refused with a certificate of another CA', async () => {
    const result = await client().send({
      url,
      ...post,
      clientCertificate: { cert: foreign.certPem, key: foreign.keyPem },
    });
    expect(result.statusCode).toBe(0);
    expect(['tls_error', 'connection_reset']).toContain(result.error);
  });

  it('never shares a connection between certificates, or with requests that present none', async () => {
    const c = client();
    const count = seen.length;
    expect(
      (await c.send({ url, ...post, clientCertificate: { cert: good.certPem, key: good.keyPem } })).statusCode,
    ).toBe(200);
    expect(
      (await c.send({ url, ...post, clientCertificate: { cert: other.certPem, key: other.keyPem } })).statusCode,
    ).toBe(200);
    // A kept-alive connection of webhook-a would have let this one through.
    expect((await c.send({ url, ...post })).statusCode).toBe(0);
    expect(
      (await c.send({ url, ...post, clientCertificate: { cert: good.certPem, key: good.keyPem } })).statusCode,
    ).toBe(200);
    expect(seen.slice(count)).toEqual(['webhook-a', 'webhook-b', 'webhook-a']);
  });

  it('presents it through the CONNECT proxy too', async () => {
    const proxy = await startProxy();
    const result = await client({ proxyUrl: proxy.url }).send({
      url,
      ...post,
      clientCertificate: { cert: good.certPem, key: good.keyPem },
    });
    expect(result).toMatchObject({ statusCode: 200, error: null });
    expect(proxy.requests).toHaveLength(1);
    await proxy.close();
  });
});

describe('inspectClientCertificate', () => {
  it('gives the fingerprint and expiry of a good pair', () => {
    const checked = inspectClientCertificate({ cert: good.certPem, key: good.keyPem });
    expect(checked).toEqual({
      ok: true,
      summary: {
        fingerprintSha256: new X509Certificate(good.certPem).fingerprint256,
        notAfter: new Date(new X509Certificate(good.certPem).validTo),
      },
    });
  });

  it('accepts a chain, leaf first', () => {
    expect(inspectClientCertificate({ cert: `${good.certPem}\n${trusted.caPem}`, key: good.keyPem }).ok).toBe(true);
  });

  it('refuses what does not parse', () => {
    expect(inspectClientCertificate({ cert: 'hello', key: good.keyPem })).toMatchObject({
      ok: false,
      message: expect.stringContaining('not a PEM certificate'),
    });
    expect(
      inspectClientCertificate({
        cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----',
        key: good.keyPem,
      }),
    ).toMatchObject({ ok: false });
    expect(inspectClientCertificate({ cert: good.certPem, key: 'nope' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('key does not parse'),
    });
  });

  it('refuses a key that does not match', () => {
    expect(inspectClientCertificate({ cert: good.certPem, key: other.keyPem })).toEqual({
      ok: false,
      message: 'key does not match the certificate',
    });
  });

  it('refuses an expired certificate', () => {
    const old = trusted.issue({
      notBefore: new Date(Date.now() - 10 * 86_400_000),
      notAfter: new Date(Date.now() - 86_400_000),
    });
    expect(inspectClientCertificate({ cert: old.certPem, key: old.keyPem })).toMatchObject({
      ok: false,
      message: expect.stringContaining('expired'),
    });
  });

  it('refuses an encrypted key', () => {
    const encrypted = createPrivateKey(good.keyPem)
      .export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pw' })
      .toString();
    expect(inspectClientCertificate({ cert: good.certPem, key: encrypted })).toMatchObject({
      ok: false,
      message: expect.stringContaining('encrypted keys'),
    });
  });

  it.each([
    ['EC P-256', ['ec', '-pkeyopt', 'ec_paramgen_curve:P-256']],
    ['EC P-384', ['ec', '-pkeyopt', 'ec_paramgen_curve:P-384']],
    ['Ed25519', ['ed25519']],
    ['RSA 2048', ['rsa:2048']],
    ['RSA 4096', ['rsa:4096']],
  ])('accepts a %s key', (_name, newkey) => {
    expect(inspectClientCertificate(selfSignedWithKey(...newkey))).toMatchObject({ ok: true });
  });

  it.each([
    ['EC P-521', ['ec', '-pkeyopt', 'ec_paramgen_curve:P-521'], /EC key on the curve secp521r1/],
    ['EC secp256k1', ['ec', '-pkeyopt', 'ec_paramgen_curve:secp256k1'], /EC key on the curve secp256k1/],
    ['Ed448', ['ed448'], /type ed448/],
    ['RSA 1024', ['rsa:1024'], /RSA key of 1024 bits/],
    ['RSA 4160', ['rsa:4160'], /RSA key of 4160 bits/],
  ])('refuses a %s key, naming the certificate', (_name, newkey, message) => {
    expect(inspectClientCertificate(selfSignedWithKey(...newkey))).toEqual({
      ok: false,
      field: 'cert',
      message: expect.stringMatching(message),
    });
  });

  it('refuses a private key of another type than allowed, naming the key', () => {
    const p256 = selfSignedWithKey('ec', '-pkeyopt', 'ec_paramgen_curve:P-256');
    const ed448 = selfSignedWithKey('ed448');
    expect(inspectClientCertificate({ cert: p256.cert, key: ed448.key })).toEqual({
      ok: false,
      field: 'key',
      message: expect.stringMatching(/type ed448 is not supported/),
    });
  });

  it('keys pools by certificate and key together', () => {
    const a = clientCertificateIdentity({ cert: good.certPem, key: good.keyPem });
    expect(a).toBe(clientCertificateIdentity({ cert: good.certPem, key: good.keyPem }));
    expect(a).not.toBe(clientCertificateIdentity({ cert: other.certPem, key: other.keyPem }));
  });
});
