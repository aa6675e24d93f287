import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import tls from 'node:tls';

/** A client certificate a webhook presents when its receiver asks (mTLS): the PEM chain, leaf first, and its key. */
export interface ClientCertificate {
  cert: string;
  key: string;
}

/** What the API shows of a client certificate: never the key, nor the PEM. */
export interface ClientCertificateSummary {
  /** SHA-256 of the leaf's DER, as `openssl x509 -fingerprint -sha256` prints it (upper-case hex, colons). */
  fingerprintSha256: string;
  notAfter: Date;
}

export type ClientCertificateCheck = { ok: true; summary: ClientCertificateSummary } | { ok: false; message: string };

/** Days before a client certificate expires that its organisation is warned (once per certificate). */
export const CLIENT_CERTIFICATE_WARNING_DAYS = 30;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Checks a client certificate before it is stored: the PEM parses (leaf first, any intermediates after), the key
 * parses without a passphrase and belongs to the leaf, the leaf has not expired, and Node builds a TLS context from
 * the pair (what every request will do). Messages never quote the key.
 */
export function inspectClientCertificate(input: ClientCertificate, now = new Date()): ClientCertificateCheck {
  const blocks = input.cert.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) return { ok: false, message: 'cert is not a PEM certificate (-----BEGIN CERTIFICATE-----)' };
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(blocks[0]!);
    for (const block of blocks.slice(1)) new X509Certificate(block);
  } catch {
    return { ok: false, message: 'cert does not parse as an X.509 certificate' };
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: input.key, format: 'pem' });
  } catch {
    return { ok: false, message: 'key does not parse as an unencrypted PEM private key (encrypted keys are not supported)' };
  }
  if (!leaf.checkPrivateKey(key)) return { ok: false, message: 'key does not match the certificate' };
  const notAfter = new Date(leaf.validTo);
  if (!(notAfter.getTime() > now.getTime())) return { ok: false, message: `the certificate expired on ${notAfter.toISOString()}` };
  try {
    tls.createSecureContext({ cert: input.cert, key: input.key });
  } catch {
    return { ok: false, message: 'the certificate and key cannot be used for TLS' };
  }
  return { ok: true, summary: { fingerprintSha256: leaf.fingerprint256, notAfter } };
}

/**
 * The identity a connection pool is keyed by: a digest of the certificate and the key, so two webhooks share
 * connections only when they present exactly the same certificate and key.
 */
export function clientCertificateIdentity(certificate: ClientCertificate): string {
  return createHash('sha256').update(certificate.cert).update('\0').update(certificate.key).digest('hex');
}
