import { randomBytes } from 'node:crypto';
import { createTestOrg } from '@gatehook/testkit/api';
import { TEST_DATABASE_URL, TEST_REDIS_CLUSTER_NODES, TEST_REDIS_URL } from '@gatehook/testkit/env';
import { startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';
import { createDb } from '@gatehook/db/client';
import { descriptor, rlsClient } from './envoy-rls-client';

// Two real API processes with RATE_LIMIT_STORE=redis (on the Redis Cluster in the redis-cluster project): their
// gRPC servers and HTTP checks share one budget, checked atomically whichever process and interface a call takes.

jest.setTimeout(120_000);

describe('ShouldRateLimit on two API processes sharing Redis', () => {
  const db = createDb(TEST_DATABASE_URL, { poolSize: 2 });
  let processes: ServiceProcess[] = [];
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGKILL')));
    await db.$disconnect();
  });

  it('admits exactly N of 50 concurrent calls, split over both processes and both interfaces, and stops on SIGTERM', async () => {
    const env = {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      ...(TEST_REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES: TEST_REDIS_CLUSTER_NODES } : {}),
      REDIS_PREFIX: `test_${randomBytes(6).toString('hex')}`,
      RATE_LIMIT_STORE: 'redis',
      NODE_ENV: 'test',
      API_RATE_LIMIT_PER_SECOND: '0',
      // What is asserted is the shared count: a Redis check slower than the 250 ms default fails open by design
      // (counted in its process only; stores/failover.test.ts), which a loaded machine's first calls can reach.
      RATE_LIMIT_REDIS_TIMEOUT_MS: '5000',
    };
    processes = await Promise.all([startServiceProcess('api', env), startServiceProcess('api', env)]);
    const org = await createTestOrg(db);
    const created = await fetch(`http://127.0.0.1:${processes[0]!.port}/rate-limits/rules`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'ceiling',
        scope: { type: 'mcp_tool_call' },
        key_by: ['org'],
        limit: 23,
        window_seconds: 60,
      }),
    });
    expect(created.status).toBe(201);

    // /healthz answered 200 (startServiceProcess waited for it): the gRPC servers already listen.
    const clients = processes.map((p) => rlsClient(p.grpcPort));
    try {
      const calls = Array.from({ length: 50 }, async (_, i) => {
        if (i % 5 === 4) {
          const response = await fetch(`http://127.0.0.1:${processes[i % 2]!.port}/rate-limits/check`, {
            method: 'POST',
            headers: { authorization: `Bearer ${org.member}`, 'content-type': 'application/json' },
            body: JSON.stringify({ tool_key: 'search' }),
          });
          return ((await response.json()) as { allowed: boolean }).allowed;
        }
        return (await clients[i % 2]!.check(org.member, { descriptors: [descriptor('search')] })).overall_code === 'OK';
      });
      const allowed = (await Promise.all(calls)).filter(Boolean).length;
      expect(allowed).toBe(23);
    } finally {
      for (const client of clients) client.close();
    }
    // SIGTERM stops the gRPC server with the HTTP server: the process exits.
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
  });
});
