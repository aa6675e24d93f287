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

/**
 * A refusal names what was at fault when it is one of the two PEMs (`field`), so the API can name
 * `client_certificate.cert` or `client_certificate.key`; a refusal of the pair as a whole has no `field`.
 */
export type ClientCertificateCheck =
  { ok: true; summary: ClientCertificateSummary } | { ok: false; message: string; field?: 'cert' | 'key' };

/**
 * The keys a client certificate and its key may have: what receivers' TLS stacks accept everywhere, at a bounded
 * cost per handshake (the key signs every handshake on the sending thread; an RSA key of 16,384 bits, which the
 * 16,384-character cap admits, costs some 60 times what one of 2,048 bits does).
 */
export const CLIENT_KEY_TYPES = 'EC P-256 or P-384, Ed25519, or RSA of 2,048 to 4,096 bits';
export const MIN_CLIENT_RSA_BITS = 2048;
export const MAX_CLIENT_RSA_BITS = 4096;
const CLIENT_EC_CURVES: ReadonlySet<string> = new Set(['prime256v1', 'secp384r1']);

/** Why a key is not one of CLIENT_KEY_TYPES, or null when it is one. */
export function clientKeyRefusal(key: KeyObject): string | null {
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (type === 'ed25519') return null;
  if (type === 'ec') {
    if (details.namedCurve !== undefined && CLIENT_EC_CURVES.has(details.namedCurve)) return null;
    return `an EC key on the curve ${details.namedCurve ?? 'given'} is not supported: use ${CLIENT_KEY_TYPES}`;
  }
  if (type === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits >= MIN_CLIENT_RSA_BITS && bits <= MAX_CLIENT_RSA_BITS) return null;
    return `an RSA key of ${bits} bits is not supported: use ${CLIENT_KEY_TYPES}`;
  }
  return `a key of type ${type ?? 'unknown'} is not supported: use ${CLIENT_KEY_TYPES}`;
}

/** Days before a client certificate expires that its organisation is warned (once per certificate). */
export const CLIENT_CERTIFICATE_WARNING_DAYS = 30;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Checks a client certificate before it is stored: the PEM parses (leaf first, any intermediates after), the leaf's
 * key and the private key are of CLIENT_KEY_TYPES, the key parses without a passphrase and belongs to the leaf, the
 * leaf has not expired, and Node builds a TLS context from the pair (what every request will do). Messages never
 * quote the key.
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
  const certKeyRefused = clientKeyRefusal(leaf.publicKey);
  if (certKeyRefused !== null) return { ok: false, field: 'cert', message: `the certificate's key: ${certKeyRefused}` };
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: input.key, format: 'pem' });
  } catch {
    return {
      ok: false,
      message: 'key does not parse as an unencrypted PEM private key (encrypted keys are not supported)',
    };
  }
  const keyRefused = clientKeyRefusal(key);
  if (keyRefused !== null) return { ok: false, field: 'key', message: keyRefused };
  if (!leaf.checkPrivateKey(key)) return { ok: false, message: 'key does not match the certificate' };
  const notAfter = new Date(leaf.validTo);
  if (!(notAfter.getTime() > now.getTime()))
    return { ok: false, message: `the certificate expired on ${notAfter.toISOString()}` };
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
