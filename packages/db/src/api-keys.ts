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

/** Revokes a key; returns false when no such key exists. Revoking twice is harmless. */
export async function revokeApiKey(db: Db, id: string): Promise<boolean> {
  const row = await db.apiKey.findUnique({ where: { id }, select: { id: true } });
  if (!row) return false;
  await db.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
  return true;
}

/** The principal of a presented key, or null when the key is unknown or revoked. */
export async function findPrincipal(db: Db, key: string): Promise<Principal | null> {
  const row = await db.apiKey.findUnique({ where: { keyHash: hashApiKey(key) } });
  if (!row || row.revokedAt) return null;
  return {
    keyId: row.id,
    keyName: row.name,
    orgId: row.orgId,
    role: row.role,
    permissions: row.permissions as Permission[],
  };
}
