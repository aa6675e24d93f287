import type { Request } from 'express';
import { hasPermission, looksLikeApiKey, type Permission, type Principal } from '@gatehook/core/api-keys';
import { AppError } from '@gatehook/core/errors';
import { findPrincipal } from '@gatehook/db/api-keys';
import type { Db } from '@gatehook/db/client';

/** What a route requires of its caller. */
export type Access = { kind: 'public' } | { kind: 'key' } | { kind: 'admin' } | { kind: 'permission'; permission: Permission };

/** Resolves the bearer key of a request into its principal, or throws 401. */
export async function authenticate(db: Db, req: Request): Promise<Principal> {
  const header = req.get('authorization') ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  const token = match?.[1];
  if (!token || !looksLikeApiKey(token)) throw new AppError('unauthorized', 'A valid API key is required (Authorization: Bearer ghk_...)');
  const principal = await findPrincipal(db, token);
  if (!principal) throw new AppError('unauthorized', 'The API key is unknown or revoked');
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
