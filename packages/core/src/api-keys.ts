import { createHash, randomBytes } from 'node:crypto';

export const PERMISSIONS = [
  'manage_webhooks',
  'view_rate_limits',
  'manage_rate_limits',
  'ingest_events',
  'check_rate_limits',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const ROLES = ['admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

const KEY_PATTERN = /^ghk_[A-Za-z0-9_-]{43}$/;

/** The invalidation topic of cached API keys (packages/cache): its keys are key hashes, never keys. */
export const API_KEYS_TOPIC = 'api-keys';

/** A new API key: `ghk_` followed by 43 base64url characters (32 random bytes). */
export function generateApiKey(): string {
  return `ghk_${randomBytes(32).toString('base64url')}`;
}

/** Whether a bearer token has the shape of a Gatehook key (checked before any database lookup). */
export function looksLikeApiKey(token: string): boolean {
  return KEY_PATTERN.test(token);
}

/** The only form in which a key is stored: SHA-256, hex. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The caller an API key identifies. */
export interface Principal {
  keyId: string;
  keyName: string;
  orgId: string;
  role: Role;
  permissions: readonly Permission[];
}

/** Admins hold every permission; members only those listed on their key. */
export function hasPermission(principal: Principal, permission: Permission): boolean {
  return principal.role === 'admin' || principal.permissions.includes(permission);
}

/** Parses a comma-separated permission list, throwing on an unknown name. */
export function parsePermissions(list: string): Permission[] {
  const names = list
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  for (const name of names) {
    if (!(PERMISSIONS as readonly string[]).includes(name)) {
      throw new Error(`unknown permission "${name}" (known: ${PERMISSIONS.join(', ')})`);
    }
  }
  return [...new Set(names)] as Permission[];
}
