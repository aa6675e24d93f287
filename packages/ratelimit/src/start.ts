import { InvalidationBus } from '@gatehook/cache/invalidation';
import { within } from '@gatehook/core/readiness';
import { connectRedis, type RedisConnection, type RedisTarget } from '@gatehook/core/redis';
import { closeRedis } from '@gatehook/core/service';
import { RateLimiter, type ExceededEvent, type FailMode } from './limiter';
import { RuleCache, type LimiterLogger, type RuleSource } from './rule-cache';
import { MemoryCounterStore } from './stores/memory';
import { RedisCounterStore } from './stores/redis';
import type { CounterStore } from './stores/store';

export interface StartRateLimiterOptions {
  /** Active rules of an organisation, e.g. `(orgId) => loadActiveRules(db, orgId)` from @gatehook/db. */
  source: RuleSource;
  /** Where Redis is: `{ url }`, or a cluster's seeds (`redisTarget(config)` of @gatehook/core/redis). */
  redis: RedisTarget;
  /** REDIS_PREFIX: counters and the invalidation channel live under it. */
  prefix: string;
  /** RATE_LIMIT_STORE: `memory` (per process, the default) or `redis` (one shared counter). */
  store: 'memory' | 'redis';
  /** RATE_LIMIT_FAIL_MODE. */
  failMode: FailMode;
  /** RATE_LIMIT_REDIS_TIMEOUT_MS: a Redis check slower than this counts as Redis being down. */
  redisTimeoutMs?: number;
  ruleCacheTtlMs?: number;
  /**
   * The process's invalidation bus (one subscriber connection for every cache), already connecting. Without it
   * the limiter opens a bus of its own, as a gateway embedding it alone would.
   */
  bus?: InvalidationBus;
  /** Memory store: most live counters of one organisation, and of the process (RATE_LIMIT_MEMORY_COUNTERS_*). */
  memoryCounters?: { perOrganisation: number; total: number };
  onExceeded?: (event: ExceededEvent) => Promise<unknown>;
  logger?: LimiterLogger;
}

/** How long start-up waits for Redis to confirm the rule subscription before going on without it. */
const SUBSCRIBE_WAIT_MS = 2_000;

/** A running limiter with the connections it owns. */
export interface RunningRateLimiter {
  limiter: RateLimiter;
  rules: RuleCache;
  store: CounterStore;
  /** Stops listening, waits for pending reports, closes connections; safe to call twice. */
  close(): Promise<void>;
}

/**
 * Starts a limiter as a gateway embeds it or the API serves it: the rule cache listening for changes on its own
 * subscriber connection (whatever the store), and with `redis` a command connection that fails fast (no offline
 * queue, no retries per command) so an outage goes to the fail mode instead of piling up calls.
 */
export async function startRateLimiter(options: StartRateLimiterOptions): Promise<RunningRateLimiter> {
  const rules = new RuleCache({
    source: options.source,
    ...(options.ruleCacheTtlMs ? { ttlMs: options.ruleCacheTtlMs } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  let ownBus: { bus: InvalidationBus; subscriber: RedisConnection } | undefined;
  if (!options.bus) {
    const subscriber = connectRedis(options.redis, { lazyConnect: true, maxRetriesPerRequest: null });
    subscriber.on('error', () => undefined);
    ownBus = { bus: new InvalidationBus(subscriber, options.prefix), subscriber };
  }
  const bus = options.bus ?? ownBus!.bus;
  let commands: RedisConnection | undefined;
  let store: CounterStore;
  if (options.store === 'redis') {
    commands = connectRedis(options.redis, { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true });
    commands.on('error', () => undefined);
    store = new RedisCounterStore(commands, {
      prefix: options.prefix,
      ...(options.redisTimeoutMs ? { timeoutMs: options.redisTimeoutMs } : {}),
    });
  } else {
    store = new MemoryCounterStore(
      options.memoryCounters
        ? { maxCountersPerOrg: options.memoryCounters.perOrganisation, maxCounters: options.memoryCounters.total }
        : {},
    );
  }

  // Neither connection may block start-up: a limiter must come up (and fail open or closed) with Redis down. The
  // subscription waits in the subscriber's offline queue until Redis answers; until then the cache TTL bounds
  // staleness.
  let unsubscribe: (() => void) | undefined;
  const following = rules.follow(bus).then((stop) => (unsubscribe = stop));
  following.catch(() => undefined);
  await Promise.allSettled([commands?.connect(), ownBus?.subscriber.connect()]);
  await within(following, SUBSCRIBE_WAIT_MS).catch(() => undefined);

  const limiter = new RateLimiter({
    rules,
    store,
    failMode: options.failMode,
    ...(options.onExceeded ? { onExceeded: options.onExceeded } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });

  let closed = false;
  return {
    limiter,
    rules,
    store,
    async close() {
      if (closed) return;
      closed = true;
      unsubscribe?.();
      // Not QUIT: to a Redis that is down it would wait.
      ownBus?.subscriber.disconnect();
      await limiter.close();
      await store.close();
      if (commands) await closeRedis(commands);
    },
  };
}
