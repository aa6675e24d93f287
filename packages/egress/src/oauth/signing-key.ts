import { createPrivateKey, type KeyObject } from 'node:crypto';

/** The JWS algorithm an assertion is signed with, by key type (RFC 7518). */
export type AssertionAlgorithm = 'RS256' | 'ES256' | 'ES384';

export type SigningKeyCheck = { ok: true; key: KeyObject; alg: AssertionAlgorithm } | { ok: false; message: string };

/** Smallest and largest RSA modulus accepted for an assertion key, in bits. */
export const RSA_MODULUS_BITS = { min: 2048, max: 4096 } as const;

const CURVES: Readonly<Record<string, AssertionAlgorithm>> = {
  prime256v1: 'ES256',
  'P-256': 'ES256',
  secp384r1: 'ES384',
  'P-384': 'ES384',
};

/**
 * Checks the private key of an OAuth assertion (CONTRACT 20) before it is stored, and opens it for signing: an
 * unencrypted PEM (PKCS #8, PKCS #1 or SEC 1) of an RSA key of 2048 to 4096 bits or an EC key on P-256 or P-384.
 * Messages never quote the key.
 */
export function inspectSigningKey(pem: string): SigningKeyCheck {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    return {
      ok: false,
      message: 'private_key does not parse as an unencrypted PEM private key (encrypted keys are not supported)',
    };
  }
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < RSA_MODULUS_BITS.min || bits > RSA_MODULUS_BITS.max) {
      return {
        ok: false,
        message: `an RSA private_key must have ${RSA_MODULUS_BITS.min} to ${RSA_MODULUS_BITS.max} bits (this one has ${bits})`,
      };
    }
    return { ok: true, key, alg: 'RS256' };
  }
  if (key.asymmetricKeyType === 'ec') {
    const alg = CURVES[details.namedCurve ?? ''];
    if (alg) return { ok: true, key, alg };
    return { ok: false, message: 'an EC private_key must be on P-256 or P-384' };
  }
  return { ok: false, message: 'private_key must be an RSA (2048 to 4096 bits) or EC (P-256 or P-384) key' };
}
