import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import forge from 'node-forge';

/**
 * The development CA: made on first use in `.gatehook/dev-ca/` at the root of the checkout (git-ignored), it signs
 * the certificate of `gatehook listen`, and `pnpm start` in development points EGRESS_EXTRA_CA_FILE at its
 * certificate, so that deliveries reach a local receiver over verified TLS without a setting edited by hand.
 * Production never reads it: nothing but development start-up names this file. It is name-constrained to this
 * machine (DEVELOPMENT_CA_NAMES).
 */
export const DEVELOPMENT_CA_DIR = path.resolve(__dirname, '../../../.gatehook/dev-ca');

export interface DevelopmentCa {
  /** The CA certificate's file: what EGRESS_EXTRA_CA_FILE names. */
  certFile: string;
  certPem: string;
  keyPem: string;
}

/** A local leaf: certificate and key PEM for localhost, 127.0.0.1 and ::1. */
export interface LocalCertificate {
  certPem: string;
  keyPem: string;
}

const CA_LIFETIME_MS = 5 * 365 * 24 * 3_600_000;
const LEAF_LIFETIME_MS = 30 * 24 * 3_600_000;
// Renew the CA this long before it expires, so a certificate it issues never outlives it.
const CA_RENEW_BEFORE_MS = LEAF_LIFETIME_MS;

function rsaPair() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()),
    publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString()),
  };
}

function serial(): string {
  // Positive, 16 bytes: unique per certificate, as browsers and OpenSSL expect.
  return `01${randomBytes(15).toString('hex')}`;
}

/**
 * The names the development CA may certify: this machine only (RFC 5280 name constraints, critical), so its key,
 * readable by whoever can read the checkout, can never vouch for another host to a process that trusts the CA.
 */
export const DEVELOPMENT_CA_NAMES = { dns: ['localhost'], ip: ['127.0.0.1', '::1'] } as const;

/** The nameConstraints extension (2.5.29.30) permitting only DEVELOPMENT_CA_NAMES, built with forge's ASN.1. */
function thisMachineOnly(): { id: string; critical: boolean; value: forge.asn1.Asn1 } {
  const { asn1 } = forge;
  const subtree = (tag: number, bytes: string) =>
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
      asn1.create(asn1.Class.CONTEXT_SPECIFIC, tag, false, bytes),
    ]);
  // An iPAddress constraint is the address followed by its mask: one address alone.
  const single = (ip: string) => {
    const address = ipaddr.parse(ip).toByteArray();
    return String.fromCharCode(...address, ...address.map(() => 0xff));
  };
  const permitted = [
    ...DEVELOPMENT_CA_NAMES.dns.map((name) => subtree(2, name)),
    ...DEVELOPMENT_CA_NAMES.ip.map((ip) => subtree(7, single(ip))),
  ];
  return {
    id: '2.5.29.30',
    critical: true,
    value: asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
      asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, permitted),
    ]),
  };
}

function createCa(): { certPem: string; keyPem: string } {
  const keys = rsaPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + CA_LIFETIME_MS);
  const name = [{ name: 'commonName', value: 'Gatehook development CA (this machine only)' }];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
    thisMachineOnly(),
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** Whether a CA certificate carries name constraints (a development CA made before they existed does not). */
function isConstrained(certPem: string): boolean {
  return Boolean(forge.pki.certificateFromPem(certPem).getExtension('nameConstraints'));
}

function readCa(dir: string): DevelopmentCa | null {
  const certFile = path.join(dir, 'ca.pem');
  const keyFile = path.join(dir, 'ca-key.pem');
  if (!existsSync(certFile) || !existsSync(keyFile)) return null;
  const certPem = readFileSync(certFile, 'utf8');
  const notAfter = new Date(new X509Certificate(certPem).validTo).getTime();
  // Replaced when about to expire, or when made without the name constraints.
  if (notAfter - CA_RENEW_BEFORE_MS < Date.now() || !isConstrained(certPem)) return null;
  return { certFile, certPem, keyPem: readFileSync(keyFile, 'utf8') };
}

/**
 * The development CA in `dir`, made there first when absent or about to expire. Safe when `pnpm start` and
 * `gatehook listen` start together: the CA is written into a fresh directory that is renamed into place, so one
 * of them wins and both use the winner's CA.
 */
export function ensureDevelopmentCa(dir: string = DEVELOPMENT_CA_DIR): DevelopmentCa {
  const existing = readCa(dir);
  if (existing) return existing;
  const parent = path.dirname(dir);
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  const staging = mkdtempSync(path.join(parent, '.dev-ca-'));
  const made = createCa();
  writeFileSync(path.join(staging, 'ca-key.pem'), made.keyPem, { mode: 0o600 });
  writeFileSync(path.join(staging, 'ca.pem'), made.certPem, { mode: 0o644 });
  // An expired or unconstrained CA is moved aside first; rename then fails only when another process put its CA in
  // place meanwhile.
  if (existsSync(dir) && !readCa(dir)) rmSync(dir, { recursive: true, force: true });
  try {
    renameSync(staging, dir);
  } catch {
    rmSync(staging, { recursive: true, force: true });
  }
  const ca = readCa(dir);
  if (!ca) throw new Error(`the development CA in ${dir} could not be created`);
  return ca;
}

/** A certificate for localhost, 127.0.0.1 and ::1 signed by the development CA, valid for 30 days. */
export function issueLocalCertificate(ca: DevelopmentCa): LocalCertificate {
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const keys = rsaPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + LEAF_LIFETIME_MS);
  cert.setSubject([{ name: 'commonName', value: 'localhost' }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 2, value: 'localhost' },
        { type: 7, ip: '127.0.0.1' },
        { type: 7, ip: '::1' },
      ],
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

/**
 * What `pnpm start` adds to its services' environment in development (NODE_ENV `development`) so that a receiver
 * of `gatehook listen` is reachable: loopback admitted by the address policy, and the development CA trusted.
 * A variable already set is left as it is; in any other NODE_ENV nothing is added, so production keeps refusing
 * every non-public address.
 */
export function developmentEgressEnv(
  env: Readonly<Record<string, string | undefined>>,
  caDir: string = DEVELOPMENT_CA_DIR,
): Record<string, string> {
  if (env.NODE_ENV !== 'development') return {};
  const added: Record<string, string> = {};
  if (!env.EGRESS_ALLOW_CIDRS) added.EGRESS_ALLOW_CIDRS = '127.0.0.1/32';
  if (!env.EGRESS_EXTRA_CA_FILE) added.EGRESS_EXTRA_CA_FILE = ensureDevelopmentCa(caDir).certFile;
  return added;
}
