import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Queue } from 'bullmq';
import type { RedisConnection } from '@gatehook/core/redis';
import type { JobName } from './catalogue';

/**
 * Where the queues live in Redis: which are sharded, the prefix (hash tag) of each queue and shard, the shard of an
 * id, the one job id of a waiting delivery, and the readiness round trip through a queue.
 */

/** The queues whose work is spread over DELIVERY_QUEUE_SHARDS queues; batch flushes and task steps are few. */
export const SHARDED_QUEUES: ReadonlySet<JobName> = new Set<JobName>(['fanout', 'deliver']);

/**
 * The BullMQ prefix of a queue (or of one shard of it): the deployment's REDIS_PREFIX, the queue and the shard in
 * one hash tag, e.g. `{gatehook:deliver:3}`. BullMQ keeps every key of one queue in one Redis Cluster slot (its
 * scripts touch several), so the tag is per queue and per shard: a cluster spreads the shards over its masters,
 * and nothing of the deployment is forced into one slot. Every key still starts with `{REDIS_PREFIX`.
 */
export function queuePrefix(prefix: string, name: string, shard?: number): string {
  return shard === undefined ? `{${prefix}:${name}}` : `{${prefix}:${name}:${shard}}`;
}

/**
 * The shard of an id (FNV-1a, 32 bits): the same in every process and every version, so a job whose id names a
 * delivery (its waiting job `d.<id>.wait`) always lands in the same queue and its deduplication holds.
 */
export function shardOf(id: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i += 1) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

const ROUND_TRIP = readFileSync(path.join(__dirname, '../lua/round-trip-1.lua'), 'utf8');

/**
 * Readiness of queues (CONTRACT 16): for each, a script that writes and reads back a key in the queue's slot, and
 * BullMQ's own count script over the queue's keys (which fails with CROSSSLOT when a queue's keys span slots).
 * Rejects when any queue fails; the caller bounds the time.
 */
export async function queueRoundTrip(queues: readonly Queue[]): Promise<void> {
  await Promise.all(
    queues.map(async (queue) => {
      const client = (await queue.getBackend().client) as unknown as RedisConnection;
      const token = randomUUID();
      const [read] = await Promise.all([
        client.eval(ROUND_TRIP, 1, `${queue.opts.prefix}:${queue.name}:readyz`, token),
        queue.getJobCounts('wait'),
      ]);
      if (read !== token)
        throw new Error(`queue ${queue.opts.prefix}:${queue.name}: the round trip read back ${String(read)}`);
    }),
  );
}

/**
 * The one job id of a delivery waiting for its turn (turned away by a full origin, or put back by the reconciler):
 * a delivery never has two such jobs, however many times it is turned away or reconciled.
 */
export function waitingJobId(deliveryId: string): string {
  return `d.${deliveryId}.wait`;
}
