import { createHash, timingSafeEqual } from 'node:crypto';

/** Shortest METRICS_TOKEN accepted: a bearer token that can be guessed protects nothing. */
export const MIN_METRICS_TOKEN_LENGTH = 16;

/**
 * Whether a request may read `/metrics`: always when no token is configured, otherwise only with
 * `Authorization: Bearer <token>`. Compared through hashes in constant time, whatever the header's length.
 */
export function metricsAuthorised(authorization: string | undefined, token: string | undefined): boolean {
  if (!token) return true;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
  if (!match) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(match[1] as string), digest(token));
}
