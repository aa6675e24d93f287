import { randomUUID } from 'node:crypto';
import { generateApiKey, hashApiKey, type Permission, type Principal, type Role } from '@gatehook/core/api-keys';
import type { Db, Pool } from './client';

export interface IssuedKey {
  id: string;
  org_id: string;
  key: string;
}

/** What issueApiKey and revokeApiKey need: a pg pool or client (`sqlPool(db)` of a Prisma client made by createDb). */
export type SqlQueryable = Pick<Pool, 'query'>;

// One statement, so one round trip and no interactive transaction: the organisation is created when it does not
// exist (the key's foreign key is checked at the end of the statement, after the CTE's insert).
const ISSUE_KEY = `WITH org AS (
    INSERT INTO organizations (id, name) VALUES ($1::uuid, $1::uuid::text) ON CONFLICT (id) DO NOTHING
  )
  INSERT INTO api_keys (id, org_id, name, role, permissions, key_hash)
  VALUES ($2, $1::uuid, $3, $4::"ApiKeyRole", $5::text[], $6)`;

/**
 * Issues a key for an organisation, creating the organisation when it does not exist. Plain SQL over pg rather than
 * Prisma: `gatehook keys create` is a command run on its own, and Prisma's first query (loading its query compiler)
 * was most of the command's time.
 */
export async function issueApiKey(
  sql: SqlQueryable,
  input: { orgId: string; name: string; role: Role; permissions: Permission[] },
): Promise<IssuedKey> {
  const key = generateApiKey();
  const id = randomUUID();
  const permissions = input.role === 'admin' ? [] : input.permissions;
  await sql.query(ISSUE_KEY, [input.orgId, id, input.name, input.role, permissions, hashApiKey(key)]);
  return { id, org_id: input.orgId, key };
}

/** A revoked key: its hash is what caches know it by (announce it so that every process forgets the key). */
export interface RevokedKey {
  id: string;
  keyHash: string;
}

const REVOKE_KEY = `WITH revoked AS (
    UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL
  )
  SELECT id, key_hash FROM api_keys WHERE id = $1`;

/** Revokes a key; null when no such key exists. Revoking twice is harmless (the first revocation's time stays). */
export async function revokeApiKey(sql: SqlQueryable, id: string): Promise<RevokedKey | null> {
  const { rows } = await sql.query<{ id: string; key_hash: string }>(REVOKE_KEY, [id]);
  const row = rows[0];
  return row ? { id: row.id, keyHash: row.key_hash } : null;
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
