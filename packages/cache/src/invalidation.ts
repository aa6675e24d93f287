import type { Cluster, Redis } from 'ioredis';
import { within } from '@gatehook/core/readiness';

/** A connection to one Redis or to a cluster (packages/core/src/redis.ts makes them). */
type Connection = Redis | Cluster;

/** The pub/sub channel of one topic of cached configuration (`webhooks`, `api-keys`, ...). */
export function invalidationChannel(prefix: string, topic: string): string {
  return `${prefix}:invalidate:${topic}`;
}

/** How long a publish to one node of a cluster may take before that node is left to the cluster's bus. */
const NODE_PUBLISH_TIMEOUT_MS = 1000;

/**
 * Tells every process that the entries `keys` of `topic` changed, so each drops its cached copy at once. Call it
 * after the change commits. When Redis is unreachable the message is lost; caches then refresh within their TTL.
 *
 * Once it resolves, the message is already on the way to every subscriber: Redis writes a published message to its
 * subscribers' connections before it answers, so a change made through the API is seen by whatever the caller does
 * next (a rotated secret signs the next event). On a cluster a subscriber sits on any node, and a message published
 * on another node reaches it only later, through the cluster's bus; so the message is published on every node
 * (masters and replicas). Each subscriber then also gets the bus's copies: each drops the entry again and keeps no
 * load in flight at that moment, a reload or two more per change, never a stale entry.
 * A node that does not answer within a second is left to the bus; only when no node took it does this fail.
 */
export async function publishInvalidation(
  redis: Connection,
  prefix: string,
  topic: string,
  keys: readonly string[],
): Promise<void> {
  if (keys.length === 0) return;
  const channel = invalidationChannel(prefix, topic);
  const message = keys.join('\n');
  const nodes = 'nodes' in redis ? redis.nodes('all') : [];
  if (nodes.length === 0) {
    await redis.publish(channel, message);
    return;
  }
  const published = await Promise.allSettled(
    nodes.map((node) => within(node.publish(channel, message), NODE_PUBLISH_TIMEOUT_MS)),
  );
  const refused = published.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (refused && published.every((r) => r.status === 'rejected')) throw refused.reason;
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
