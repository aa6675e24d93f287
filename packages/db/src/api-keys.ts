import { randomUUID } from 'node:crypto';
import { generateApiKey, hashApiKey, type Permission, type Principal, type Role } from '@gatehook/core/api-keys';
import type { Db } from './client';

export interface IssuedKey {
  id: string;
  org_id: string;
  key: string;
}

/** Issues a key for an organisation, creating the organisation when it does not exist. */
export async function issueApiKey(
  db: Db,
  input: { orgId: string; name: string; role: Role; permissions: Permission[] },
): Promise<IssuedKey> {
  const key = generateApiKey();
  const id = randomUUID();
  await db.$transaction(async (tx) => {
    await tx.organization.upsert({
      where: { id: input.orgId },
      create: { id: input.orgId, name: input.orgId },
      update: {},
    });
    await tx.apiKey.create({
      data: {
        id,
        orgId: input.orgId,
        name: input.name,
        role: input.role,
        permissions: input.role === 'admin' ? [] : input.permissions,
        keyHash: hashApiKey(key),
      },
    });
  });
  return { id, org_id: input.orgId, key };
}

/** A revoked key: its hash is what caches know it by (announce it so that every process forgets the key). */
export interface RevokedKey {
  id: string;
  keyHash: string;
}

/** Revokes a key; null when no such key exists. Revoking twice is harmless. */
export async function revokeApiKey(db: Db, id: string): Promise<RevokedKey | null> {
  const row = await db.apiKey.findUnique({ where: { id }, select: { id: true, keyHash: true } });
  if (!row) return null;
  await db.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
  return { id: row.id, keyHash: row.keyHash };
}

/** The principal of a key hash (see hashApiKey), or null when the key is unknown or revoked. */
export async function findPrincipalByHash(db: Db, keyHash: string): Promise<Principal | null> {
  const row = await db.apiKey.findUnique({ where: { keyHash } });
  if (!row || row.revokedAt) return null;
  return {
    keyId: row.id,
    keyName: row.name,
    orgId: row.orgId,
    role: row.role,
    permissions: row.permissions as Permission[],
  };
}
