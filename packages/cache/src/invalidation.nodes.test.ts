import { randomUUID } from 'node:crypto';
import { Redis, type Cluster } from 'ioredis';
import { testRedis } from '@gatehook/testkit/redis';
import { waitFor } from '@gatehook/testkit/until';
import { ConfigCache } from './config-cache';
import { InvalidationBus, invalidationChannel, publishInvalidation } from './invalidation';

// Runs on the one Redis (project `redis`) and on the cluster (project `redis-cluster`, CLUSTER_SUITES), where a
// subscriber sits on any node and a message published elsewhere reaches it only through the cluster's bus.
describe('publishInvalidation on every node', () => {
  const prefix = `test-${randomUUID()}`;
  const publisher = testRedis();
  const opened: Redis[] = [];
  const buses: InvalidationBus[] = [];
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    for (const r of opened) r.disconnect();
    publisher.disconnect();
  });

  /** Every node of the tests' Redis (each master and replica of a cluster), as host and port. */
  async function everyNode(): Promise<{ host: string; port: number }[]> {
    if (!('nodes' in publisher)) return [{ host: publisher.options.host!, port: publisher.options.port! }];
    const cluster = publisher as Cluster;
    await cluster.ping();
    const nodes = cluster.nodes('all');
    // On one node the bus would have nothing to carry: the point is that more than one node executes it.
    expect(nodes.length).toBeGreaterThan(1);
    return nodes.map((n) => ({ host: n.options.host!, port: n.options.port! }));
  }

  it('is executed by every node before it resolves, so each subscriber has it from its own node', async () => {
    const nodes = await everyNode();
    const channel = invalidationChannel(prefix, 'things');
    // MONITOR shows the commands a node executes, not the messages the cluster's bus brings it.
    const seen = nodes.map(() => false);
    await Promise.all(
      nodes.map(async ({ host, port }, i) => {
        const connection = new Redis({ host, port, lazyConnect: true });
        opened.push(connection);
        const monitor = await connection.monitor();
        opened.push(monitor);
        monitor.on('monitor', (_time: string, args: string[]) => {
          if (args[0]?.toLowerCase() === 'publish' && args[1] === channel) seen[i] = true;
        });
      }),
    );
    await publishInvalidation(publisher, prefix, 'things', ['a']);
    await waitFor(() => seen.every(Boolean), { timeoutMs: 5000, what: 'every node to execute the PUBLISH' });
    expect(seen).toEqual(nodes.map(() => true));
  });

  it("reaches a process following the topic through its own connection to the tests' Redis", async () => {
    const values = new Map([['a', 1]]);
    const bus = new InvalidationBus(testRedis(), prefix);
    buses.push(bus);
    const cache = new ConfigCache<number>({ max: 10, ttlMs: 600_000, load: async (k) => values.get(k) ?? null });
    await cache.follow(bus, 'things');
    await cache.get('a');
    values.set('a', 2);
    await publishInvalidation(publisher, prefix, 'things', ['a']);
    await waitFor(() => cache.peek('a') === undefined, { timeoutMs: 5000, everyMs: 5 });
    expect(await cache.get('a')).toBe(2);
  });
});
