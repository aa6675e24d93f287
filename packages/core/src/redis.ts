import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

/**
 * The one place Redis connections are made (CONTRACT 16). Every connection of the API, the worker, the rate
 * limiter, the invalidation bus and management throttling comes from {@link connectRedis}: with
 * `REDIS_CLUSTER_NODES` set it is an ioredis Cluster client (redirections, failover and slot refresh are
 * ioredis's), else a plain client of `REDIS_URL`. Callers name what the connection is for, never how to reach it.
 */

/** A connection as the rest of the code sees it: one server or a cluster, the same commands. */
export type RedisConnection = Redis | Cluster;

/** Where Redis is: a cluster's seed URLs when set (REDIS_URL is then ignored), else one server's URL. */
export interface RedisTarget {
  url: string;
  clusterNodes?: readonly string[];
}

/** How a connection behaves when Redis is slow or away. */
export interface ConnectionProfile {
  /**
   * null: a command waits for Redis however long (BullMQ workers, subscribers); a number: it fails after that many
   * retries.
   */
  maxRetriesPerRequest: number | null;
  /** false: a command while disconnected fails at once instead of waiting (fail-fast paths). */
  enableOfflineQueue?: boolean;
  /** Connect on the first command or on `connect()`, not at construction. */
  lazyConnect?: boolean;
  /** false: never reconnect (one-shot commands of the CLI). */
  reconnect?: boolean;
}

/** The target a configuration names. */
export function redisTarget(config: { REDIS_URL: string; REDIS_CLUSTER_NODES?: readonly string[] }): RedisTarget {
  return config.REDIS_CLUSTER_NODES && config.REDIS_CLUSTER_NODES.length > 0
    ? { url: config.REDIS_URL, clusterNodes: config.REDIS_CLUSTER_NODES }
    : { url: config.REDIS_URL };
}

/** Whether the target is a cluster. */
export function isCluster(target: RedisTarget): boolean {
  return (target.clusterNodes?.length ?? 0) > 0;
}

/** A seed URL's address and the credentials and TLS it carries (`rediss://user:pass@host:port`). */
export function parseSeed(url: string): {
  host: string;
  port: number;
  username?: string;
  password?: string;
  tls: boolean;
} {
  // Error messages name the URL without its password: they are printed at start-up.
  const shown = url.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${shown}: not a URL (redis://host:port or rediss://user:pass@host:port)`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    throw new Error(`${shown}: must be redis:// or rediss://`);
  if (!parsed.hostname) throw new Error(`${shown}: has no host`);
  const seed: { host: string; port: number; username?: string; password?: string; tls: boolean } = {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port ? Number(parsed.port) : 6379,
    tls: parsed.protocol === 'rediss:',
  };
  if (parsed.username) seed.username = decodeURIComponent(parsed.username);
  if (parsed.password) seed.password = decodeURIComponent(parsed.password);
  return seed;
}

/** Opens a connection to the target with the given profile. The caller owns it (and attaches an 'error' listener). */
export function connectRedis(target: RedisTarget, profile: ConnectionProfile): RedisConnection {
  const perConnection: RedisOptions = {
    maxRetriesPerRequest: profile.maxRetriesPerRequest,
    ...(profile.enableOfflineQueue === undefined ? {} : { enableOfflineQueue: profile.enableOfflineQueue }),
    ...(profile.lazyConnect ? { lazyConnect: true } : {}),
    ...(profile.reconnect === false ? { retryStrategy: () => null } : {}),
  };
  if (!isCluster(target)) return new Redis(target.url, perConnection);

  const seeds = target.clusterNodes!.map(parseSeed);
  const first = seeds[0]!;
  const redisOptions: RedisOptions = { ...perConnection, lazyConnect: undefined };
  delete redisOptions.lazyConnect;
  delete redisOptions.retryStrategy;
  if (first.username) redisOptions.username = first.username;
  if (first.password) redisOptions.password = first.password;
  // TLS clusters announce their nodes by IP while certificates name hosts: keep the seed's name for SNI and
  // verification, and let ioredis connect to the announced addresses as they are.
  if (first.tls) redisOptions.tls = { servername: first.host };
  const options: ClusterOptions = {
    redisOptions,
    ...(profile.enableOfflineQueue === undefined ? {} : { enableOfflineQueue: profile.enableOfflineQueue }),
    ...(profile.lazyConnect ? { lazyConnect: true } : {}),
    ...(profile.reconnect === false ? { clusterRetryStrategy: () => null } : {}),
    ...(first.tls
      ? {
          dnsLookup: (address: string, callback: (err: Error | null, address: string) => void) =>
            callback(null, address),
        }
      : {}),
    // A MOVED during a failover or resharding is followed, and the slot map refreshed, by ioredis itself.
    slotsRefreshTimeout: 2_000,
  };
  return new Cluster(
    seeds.map(({ host, port }) => ({ host, port })),
    options,
  );
}
