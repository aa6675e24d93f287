import { LRUCache } from 'lru-cache';
import type { InvalidationBus } from './invalidation';

export interface ConfigCacheOptions<V> {
  /** Loads the current value from the source of truth; null when there is none (cached too). */
  load: (key: string) => Promise<V | null>;
  /** Most entries kept; the least recently used go first. */
  max: number;
  /** Backstop when an invalidation is lost (Redis down): no entry is served longer than this. */
  ttlMs: number;
  /**
   * When set, a missing value (null) is kept apart, in an LRU of this many entries: keys that name nothing (say,
   * random API keys from unauthenticated traffic) then evict only each other, never a value that exists.
   */
  missMax?: number;
  /** Whether a loaded value is kept; one that is not answers its caller and the next call loads again. */
  keep?: (value: V | null) => boolean;
}

type Entry<V> = { value: V | null };

/**
 * A bounded per-process cache of configuration read on a hot path (webhooks of an organisation, API keys), kept
 * true by invalidation messages: {@link invalidate} on this process, {@link InvalidationBus} for the others.
 * Concurrent misses of one key share one load. A load that raced an invalidation still answers its caller but is
 * not kept, so an entry never outlives a change announced after its load began.
 */
export class ConfigCache<V> {
  private readonly entries: LRUCache<string, Entry<V>>;
  /** Where missing values (null) are kept: {@link entries} itself unless `missMax` is set. */
  private readonly misses: LRUCache<string, Entry<V>>;
  private readonly loading = new Map<string, Promise<V | null>>();
  /** Bumped by every invalidation; a load that saw another epoch at its end keeps nothing. */
  private epoch = 0;

  constructor(private readonly options: ConfigCacheOptions<V>) {
    this.entries = new LRUCache<string, Entry<V>>({ max: options.max, ttl: options.ttlMs, ttlAutopurge: false });
    this.misses =
      options.missMax === undefined
        ? this.entries
        : new LRUCache<string, Entry<V>>({ max: options.missMax, ttl: options.ttlMs, ttlAutopurge: false });
  }

  private cached(key: string): Entry<V> | undefined {
    return this.entries.get(key) ?? (this.misses === this.entries ? undefined : this.misses.get(key));
  }

  /** The cached value of a key, loading it on a miss. */
  get(key: string): Promise<V | null> {
    const hit = this.cached(key);
    if (hit) return Promise.resolve(hit.value);
    return this.load(key);
  }

  /** The cached value without loading: undefined on a miss. For synchronous fast paths. */
  peek(key: string): V | null | undefined {
    return this.cached(key)?.value;
  }

  private load(key: string): Promise<V | null> {
    const pending = this.loading.get(key);
    if (pending) return pending;
    const epoch = this.epoch;
    const promise = this.options
      .load(key)
      .then((value) => {
        if (this.epoch === epoch && (this.options.keep?.(value) ?? true))
          (value === null ? this.misses : this.entries).set(key, { value });
        return value;
      })
      .finally(() => {
        if (this.loading.get(key) === promise) this.loading.delete(key);
      });
    this.loading.set(key, promise);
    return promise;
  }

  /** Drops the entries of these keys (and makes loads in flight for any key keep nothing). */
  invalidate(keys: readonly string[]): void {
    this.epoch += 1;
    for (const key of keys) {
      this.entries.delete(key);
      this.misses.delete(key);
      this.loading.delete(key);
    }
  }

  /** Drops everything. */
  clear(): void {
    this.epoch += 1;
    this.entries.clear();
    this.misses.clear();
    this.loading.clear();
  }

  /** Keeps this cache true to changes announced on `topic` by any process. */
  follow(bus: InvalidationBus, topic: string): Promise<() => void> {
    return bus.listen(topic, { onKeys: (keys) => this.invalidate(keys), onReset: () => this.clear() });
  }

  get size(): number {
    return this.entries.size;
  }
}
