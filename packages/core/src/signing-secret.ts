import { randomBytes } from 'node:crypto';

export const SIGNING_SECRET_PREFIX = 'whsec_';

/** A new Standard Webhooks signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateSigningSecret(): string {
  return `${SIGNING_SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}
