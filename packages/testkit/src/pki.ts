import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';

export interface Pki {
  caPem: string;
  keyPem: string;
  certPem: string;
}

/** A throwaway CA and a leaf for localhost, 127.0.0.1 and `extraNames`, signed by it (test receivers). */
export function createPki(extraNames: readonly string[] = []): Pki {
  const validity = (cert: forge.pki.Certificate, serial: string) => {
    cert.serialNumber = serial;
    cert.validity.notBefore = new Date(Date.now() - 60_000);
    cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000);
  };
  const { ca, caKeys, caName } = createCa('Gatehook test CA', new Date(Date.now() + 24 * 3600_000));

  const leafKeys = forgeKeyPair();
  const leaf = forge.pki.createCertificate();
  leaf.publicKey = leafKeys.publicKey;
  validity(leaf, '02');
  leaf.setSubject([{ name: 'commonName', value: 'localhost' }]);
  leaf.setIssuer(caName);
  leaf.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 2, value: 'localhost' },
        ...extraNames.map((value) => ({ type: 2, value })),
        { type: 7, ip: '127.0.0.1' },
      ],
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  leaf.sign(caKeys.privateKey, forge.md.sha256.create());

  return {
    caPem: forge.pki.certificateToPem(ca),
    keyPem: forge.pki.privateKeyToPem(leafKeys.privateKey),
    certPem: forge.pki.certificateToPem(leaf),
  };
}

/** A throwaway CA that issues client certificates (mTLS tests), each with a fresh RSA key. */
export interface ClientCa {
  caPem: string;
  /** A client certificate signed by this CA; valid from a minute ago for a day unless told otherwise. */
  issue(options?: { commonName?: string; notBefore?: Date; notAfter?: Date }): { certPem: string; keyPem: string };
}

function forgeKeyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()),
    publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString()),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

function createCa(name: string, notAfter: Date) {
  const caKeys = forgeKeyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = '01';
  ca.validity.notBefore = new Date(Date.now() - 3600_000);
  ca.validity.notAfter = notAfter;
  const caName = [{ name: 'commonName', value: name }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());
  return { ca, caKeys, caName };
}

/** Creates a CA for client certificates. */
export function createClientCa(name = 'Gatehook test client CA'): ClientCa {
  const { ca, caKeys, caName } = createCa(name, new Date(Date.now() + 3650 * 24 * 3600_000));
  let serial = 1;
  return {
    caPem: forge.pki.certificateToPem(ca),
    issue(options = {}) {
      const keys = forgeKeyPair();
      const cert = forge.pki.createCertificate();
      cert.publicKey = keys.publicKey;
      serial += 1;
      cert.serialNumber = serial.toString(16).padStart(2, '0');
      cert.validity.notBefore = options.notBefore ?? new Date(Date.now() - 60_000);
      cert.validity.notAfter = options.notAfter ?? new Date(Date.now() + 24 * 3600_000);
      cert.setSubject([{ name: 'commonName', value: options.commonName ?? 'gatehook-client' }]);
      cert.setIssuer(caName);
      cert.setExtensions([
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, critical: true },
        { name: 'extKeyUsage', clientAuth: true },
        { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
      ]);
      cert.sign(caKeys.privateKey, forge.md.sha256.create());
      return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
    },
  };
}

/**
 * A self-signed certificate and its PKCS#8 key of any kind `openssl req -newkey` makes (`ec -pkeyopt
 * ec_paramgen_curve:P-384`, `ed25519`, `rsa:1024`, …): forge makes RSA keys only.
 */
export function selfSignedWithKey(...newkey: string[]): { cert: string; key: string } {
  const pem = execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', ...newkey, '-keyout', '-', '-nodes', '-subj', '/CN=client', '-days', '2'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const block = (label: string) => new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----`).exec(pem)![0];
  return { cert: block('CERTIFICATE'), key: block('PRIVATE KEY') };
}
