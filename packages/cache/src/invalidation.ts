import type { Cluster, Redis } from 'ioredis';

/** A connection to one Redis or to a cluster (packages/core/src/redis.ts makes them). */
type Connection = Redis | Cluster;

/** The pub/sub channel of one topic of cached configuration (`webhooks`, `api-keys`, ...). */
export function invalidationChannel(prefix: string, topic: string): string {
  return `${prefix}:invalidate:${topic}`;
}

/**
 * Tells every process that the entries `keys` of `topic` changed, so each drops its cached copy at once. Call it
 * after the change commits. When Redis is unreachable the message is lost; caches then refresh within their TTL.
 */
export async function publishInvalidation(
  redis: Connection,
  prefix: string,
  topic: string,
  keys: readonly string[],
): Promise<void> {
  if (keys.length === 0) return;
  await redis.publish(invalidationChannel(prefix, topic), keys.join('\n'));
}

type Listener = { onKeys(keys: string[]): void; onReset(): void };

/**
 * The receiving end of invalidations in one process: one subscriber connection for every cache. While the
 * connection is down messages are lost, so every cache is cleared when it comes back and again once Redis has
 * confirmed the subscriptions anew: a process never serves an entry older than the last moment it was certainly
 * listening. A cache that starts following a topic is cleared once its subscription is confirmed, for the same
 * reason.
 */
export class InvalidationBus {
  private readonly listeners = new Map<string, Set<Listener>>();
  private closed = false;
  /** Whether the connection has been ready before: only a later `ready` is a reconnection. */
  private connectedBefore = false;

  /** `subscriber` is a connection of its own (a subscribed ioredis connection can do nothing else). */
  constructor(
    private readonly subscriber: Connection,
    private readonly prefix: string,
  ) {
    subscriber.on('message', (channel: string, message: string) => {
      const topic = channel.slice(invalidationChannel(prefix, '').length);
      for (const listener of this.listeners.get(topic) ?? []) listener.onKeys(message.split('\n'));
    });
    this.connectedBefore = subscriber.status === 'ready';
    // ioredis re-subscribes on its own after a reconnect; anything published meanwhile was missed. The first
    // `ready` is no reconnection: ioredis may emit it after a subscription made while connecting was confirmed.
    subscriber.on('ready', () => {
      if (!this.connectedBefore) {
        this.connectedBefore = true;
        return;
      }
      this.resetAll();
      void this.confirmSubscriptions();
    });
    // A cluster client keeps its subscriptions on one node and moves them to another when that node leaves (a
    // failover, a resharding): messages published meanwhile are missed, so a change of nodes clears every cache.
    if ('nodes' in subscriber) {
      subscriber.on('-node', () => {
        this.resetAll();
        void this.confirmSubscriptions();
      });
    }
  }

  /** Subscribes again to every topic (a no-op for Redis if ioredis already did) and clears once confirmed. */
  private async confirmSubscriptions(): Promise<void> {
    const channels = [...this.listeners.keys()].map((topic) => invalidationChannel(this.prefix, topic));
    if (channels.length === 0 || this.closed) return;
    try {
      await this.subscriber.subscribe(...channels);
      this.resetAll();
    } catch {
      // The connection dropped again; the next `ready` starts over.
    }
  }

  /** Listens to a topic; resolves once Redis confirmed the subscription. Returns the way to stop listening. */
  async listen(topic: string, listener: Listener): Promise<() => void> {
    let set = this.listeners.get(topic);
    if (!set) {
      set = new Set();
      this.listeners.set(topic, set);
    }
    set.add(listener);
    await this.subscriber.subscribe(invalidationChannel(this.prefix, topic));
    // Whatever was cached before this moment may have missed a message.
    listener.onReset();
    return () => set.delete(listener);
  }

  private resetAll(): void {
    for (const set of this.listeners.values()) for (const listener of set) listener.onReset();
  }

  /** Closes the subscriber connection; safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }
}
