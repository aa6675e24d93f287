import type { Cluster } from 'ioredis';
import { connectRedis, type ConnectionProfile, type RedisConnection, type RedisTarget } from '@gatehook/core/redis';
import { TEST_REDIS_CLUSTER_NODES, TEST_REDIS_URL } from './env';

/** The tests' Redis: the cluster of the `redis-cluster` jest project when it runs, else the local Redis. */
export function testRedisTarget(): RedisTarget {
  const nodes = TEST_REDIS_CLUSTER_NODES.split(',').filter((n) => n !== '');
  return nodes.length > 0 ? { url: TEST_REDIS_URL, clusterNodes: nodes } : { url: TEST_REDIS_URL };
}

/** A connection to the tests' Redis (one server or the cluster), from the service's own factory. */
export function testRedis(profile: ConnectionProfile = { maxRetriesPerRequest: null }): RedisConnection {
  const connection = connectRedis(testRedisTarget(), profile);
  connection.on('error', () => undefined);
  return connection;
}

/** Runs a command on every master (a cluster's, or the one server): KEYS, SCRIPT FLUSH and the like. */
export async function onEveryMaster<T>(
  connection: RedisConnection,
  command: (node: RedisConnection) => Promise<T>,
): Promise<T[]> {
  const nodes = 'nodes' in connection ? (connection as Cluster).nodes('master') : [connection];
  return Promise.all(nodes.map((node) => command(node)));
}

/** The keys matching a pattern, on every master. */
export async function keysEverywhere(connection: RedisConnection, pattern: string): Promise<string[]> {
  return (await onEveryMaster(connection, (node) => node.keys(pattern))).flat();
}
