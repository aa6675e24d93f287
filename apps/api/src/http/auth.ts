import type { IncomingMessage } from 'node:http';
import { hasPermission, looksLikeApiKey, type Permission, type Principal } from '@gatehook/core/api-keys';
import { AppError } from '@gatehook/core/errors';
import type { ApiKeyCache } from './api-keys';

/** What a route requires of its caller. */
export type Access =
  { kind: 'public' } | { kind: 'key' } | { kind: 'admin' } | { kind: 'permission'; permission: Permission };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function unknownKey(): AppError {
  return new AppError('unauthorized', 'The API key is unknown or revoked');
}

/**
 * Resolves the bearer key of a request into its principal, or throws 401. Synchronous when the key is cached, so
 * the check route's common case awaits nothing before the limiter.
 */
export function authenticate(keys: ApiKeyCache, req: IncomingMessage): Principal | Promise<Principal> {
  return authenticateBearer(keys, req.headers.authorization);
}

/** {@link authenticate} on the value of an `authorization` header or gRPC metadata entry. */
export function authenticateBearer(
  keys: Pick<ApiKeyCache, 'principalOf'>,
  header: string | undefined,
): Principal | Promise<Principal> {
  const token = BEARER.exec(header ?? '')?.[1];
  if (!token || !looksLikeApiKey(token))
    throw new AppError('unauthorized', 'A valid API key is required (Authorization: Bearer ghk_...)');
  const principal = keys.principalOf(token);
  if (principal === null) throw unknownKey();
  if (principal instanceof Promise) {
    return principal.then((found) => {
      if (!found) throw unknownKey();
      return found;
    });
  }
  return principal;
}

/** Throws 403 when the principal lacks what the route requires. */
export function authorize(principal: Principal, access: Access): void {
  if (access.kind === 'admin' && principal.role !== 'admin') {
    throw new AppError('forbidden', 'This operation needs an admin key');
  }
  if (access.kind === 'permission' && !hasPermission(principal, access.permission)) {
    throw new AppError('forbidden', `This operation needs the ${access.permission} permission`);
  }
}
