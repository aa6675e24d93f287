import { generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';

export interface Pki {
  caPem: string;
  keyPem: string;
  certPem: string;
}

/** A throwaway CA and a leaf for localhost, 127.0.0.1 and `extraNames`, signed by it (test receivers). */
export function createPki(extraNames: readonly string[] = []): Pki {
  const rsaPair = () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    return {
      privateKey: forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()),
      publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString()),
    };
  };
  const validity = (cert: forge.pki.Certificate, serial: string) => {
    cert.serialNumber = serial;
    cert.validity.notBefore = new Date(Date.now() - 60_000);
    cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000);
  };

  const caKeys = rsaPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  validity(ca, '01');
  const caName = [{ name: 'commonName', value: 'Gatehook test CA' }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const leafKeys = rsaPair();
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
