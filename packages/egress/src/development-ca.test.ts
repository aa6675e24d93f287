import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import forge from 'node-forge';
import { developmentEgressEnv, ensureDevelopmentCa, issueLocalCertificate, type DevelopmentCa } from './development-ca';

/** A leaf for `name` signed with the development CA's key, as whoever reads the checkout could make one. */
function leafFor(ca: DevelopmentCa, name: string): { certPem: string; keyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  cert.serialNumber = '0badc0de';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: name }]);
  cert.setIssuer(forge.pki.certificateFromPem(ca.certPem).subject.attributes);
  cert.setExtensions([
    { name: 'subjectAltName', altNames: [{ type: 2, value: name }] },
    { name: 'extKeyUsage', serverAuth: true },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(ca.keyPem), forge.md.sha256.create());
  return {
    certPem: forge.pki.certificateToPem(cert),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** Whether a TLS client that trusts the CA accepts `leaf` for `servername` (OpenSSL's chain verification). */
async function trusted(
  ca: DevelopmentCa,
  leaf: { certPem: string; keyPem: string },
  servername: string,
): Promise<string | true> {
  const server = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => socket.end());
  server.on('tlsClientError', () => undefined);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const socket = tls.connect({
      host: '127.0.0.1',
      port: (server.address() as AddressInfo).port,
      servername,
      ca: ca.certPem,
    });
    const outcome = await new Promise<string | true>((resolve) => {
      socket.once('secureConnect', () => resolve(true));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.message));
    });
    socket.destroy();
    return outcome;
  } finally {
    server.close();
  }
}

const freshDir = () => path.join(mkdtempSync(path.join(tmpdir(), 'gatehook-dev-ca-')), 'dev-ca');

describe('development CA', () => {
  it('is made once and then reused; it signs a certificate for localhost and 127.0.0.1', () => {
    const dir = freshDir();
    const ca = ensureDevelopmentCa(dir);
    expect(ensureDevelopmentCa(dir).certPem).toBe(ca.certPem);
    const leaf = new X509Certificate(issueLocalCertificate(ca).certPem);
    expect(leaf.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(leaf.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(leaf.checkHost('localhost')).toBe('localhost');
  });

  it('development start-up admits loopback and trusts the CA, unless already set; any other NODE_ENV adds nothing', () => {
    const dir = freshDir();
    expect(developmentEgressEnv({ NODE_ENV: 'development' }, dir)).toEqual({
      EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
      EGRESS_EXTRA_CA_FILE: path.join(dir, 'ca.pem'),
    });
    expect(
      developmentEgressEnv(
        { NODE_ENV: 'development', EGRESS_ALLOW_CIDRS: '10.0.0.0/8', EGRESS_EXTRA_CA_FILE: '/mine.pem' },
        dir,
      ),
    ).toEqual({});
    for (const NODE_ENV of ['production', 'test', undefined])
      expect(developmentEgressEnv({ NODE_ENV }, freshDir())).toEqual({});
  });

  it('is name-constrained to localhost, 127.0.0.1 and ::1: a certificate it signs for another name is refused', async () => {
    const ca = ensureDevelopmentCa(freshDir());
    const constraints = forge.pki.certificateFromPem(ca.certPem).getExtension('nameConstraints') as {
      critical: boolean;
      permittedSubtrees: { type: number; value?: string; ip?: string }[];
    };
    expect(constraints.critical).toBe(true);
    expect(constraints.permittedSubtrees.map((t) => t.type)).toEqual([2, 7, 7]);
    expect(await trusted(ca, issueLocalCertificate(ca), 'localhost')).toBe(true);
    expect(await trusted(ca, leafFor(ca, 'localhost'), 'localhost')).toBe(true);
    expect(await trusted(ca, leafFor(ca, 'bank.example.com'), 'bank.example.com')).toBe('permitted subtree violation');
  });

  it('replaces a development CA made without name constraints', () => {
    const dir = freshDir();
    const ca = ensureDevelopmentCa(dir);
    // An older CA: same files, no constraints.
    const keys = forge.pki.privateKeyFromPem(ca.keyPem);
    const old = forge.pki.createCertificate();
    old.publicKey = forge.pki.setRsaPublicKey(
      (keys as forge.pki.rsa.PrivateKey).n,
      (keys as forge.pki.rsa.PrivateKey).e,
    );
    old.serialNumber = '01';
    old.validity.notBefore = new Date(Date.now() - 60_000);
    old.validity.notAfter = new Date(Date.now() + 365 * 86_400_000);
    old.setSubject([{ name: 'commonName', value: 'old development CA' }]);
    old.setIssuer([{ name: 'commonName', value: 'old development CA' }]);
    old.setExtensions([{ name: 'basicConstraints', cA: true, critical: true }]);
    old.sign(keys, forge.md.sha256.create());
    writeFileSync(ca.certFile, forge.pki.certificateToPem(old));
    const renewed = ensureDevelopmentCa(dir);
    expect(renewed.certPem).not.toBe(forge.pki.certificateToPem(old));
    expect(forge.pki.certificateFromPem(renewed.certPem).getExtension('nameConstraints')).toBeTruthy();
  });
});
