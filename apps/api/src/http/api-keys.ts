import type { RedisConnection } from '@gatehook/core/redis';
import type { Config } from '@gatehook/core/config';
import { within } from '@gatehook/core/readiness';
import { ConfigCache } from '@gatehook/cache/config-cache';
import { publishInvalidation, type InvalidationBus } from '@gatehook/cache/invalidation';
import { API_KEYS_TOPIC, hashApiKey, type Principal } from '@gatehook/core/api-keys';
import { findPrincipalByHash } from '@gatehook/db/api-keys';
import type { Db } from '@gatehook/db/client';

/**
 * The principals of presented API keys, cached per process by key hash (never by the key itself), so a request
 * costs a SHA-256 and a map lookup instead of a Postgres query. Unknown and revoked keys are cached as null too,
 * but apart (`missMax` entries): unauthenticated traffic with random keys evicts only other unknown keys, never a
 * verified one, so it cannot turn every real request into a query.
 * Every change to a key is announced on the `api-keys` topic with its hash ({@link announceApiKeyChange}); each
 * process following it drops the entry at once, so a revocation takes effect everywhere within a second. When the
 * message is lost (Redis down), `ttlMs` bounds how long a revoked key may still be accepted.
 */
export class ApiKeyCache {
  private readonly cache: ConfigCache<Principal>;

  constructor(db: Db, options: { max: number; missMax: number; ttlMs: number }) {
    this.cache = new ConfigCache<Principal>({ load: (keyHash) => findPrincipalByHash(db, keyHash), ...options });
  }

  /** The principal of a key, or null when unknown or revoked; without a promise when cached (the common case). */
  principalOf(key: string): Principal | null | Promise<Principal | null> {
    const keyHash = hashApiKey(key);
    const hit = this.cache.peek(keyHash);
    return hit === undefined ? this.cache.get(keyHash) : hit;
  }

  /** Follows key changes announced by any process; resolves once subscribed. */
  follow(bus: InvalidationBus): Promise<() => void> {
    return this.cache.follow(bus, API_KEYS_TOPIC);
  }

  /** Drops every cached key. */
  clear(): void {
    this.cache.clear();
  }
}

/** Tells every API process that these keys changed (revoked, role or permissions). Call after the change commits. */
export function announceApiKeyChange(
  redis: RedisConnection,
  prefix: string,
  keyHashes: readonly string[],
): Promise<void> {
  return publishInvalidation(redis, prefix, API_KEYS_TOPIC, keyHashes);
}

/**
 * The API key cache of the configuration, following key changes on `bus`. Start-up waits up to two seconds for
 * Redis to confirm the subscription, then goes on (the subscription completes when Redis comes; the TTL bounds
 * staleness until then).
 */
export async function startApiKeyCache(config: Config, db: Db, bus: InvalidationBus): Promise<ApiKeyCache> {
  const cache = new ApiKeyCache(db, {
    max: config.API_KEY_CACHE_MAX,
    missMax: config.API_KEY_MISS_CACHE_MAX,
    ttlMs: config.API_KEY_CACHE_TTL_MS,
  });
  const following = cache.follow(bus);
  following.catch(() => undefined);
  await within(following, 2_000).catch(() => undefined);
  return cache;
}
