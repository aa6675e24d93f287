import { randomBytes, randomUUID } from 'node:crypto';
import { issueApiKey } from '@gatehook/db/api-keys';
import { createDb, type Db } from '@gatehook/db/client';
import { ingestAuditEvents } from '@gatehook/delivery/ingest';
import { createTestDatabase } from '@gatehook/testkit/database';
import { startRedisServer, startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';
import { startReceiver, testCa, type TestReceiver } from '@gatehook/testkit/receiver';
import { auditEvent } from '@gatehook/testkit/stack';

// Chaos at a CI-friendly size: real API and worker processes, a private Redis server, and a receiver that
// counts event ids. `pnpm test:chaos` runs only these. Each scenario prints its lost and duplicated counts.
const EVENTS = Number(process.env.CHAOS_EVENTS ?? 150);
const BATCH = 10;

let db: Db;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
});
afterAll(async () => {
  await db.$disconnect();
  await database.drop();
});

/** One chaos run: a private Redis, an API and a worker process, a webhook to a receiver that counts event ids. */
interface Chaos {
  env: Record<string, string>;
  orgId: string;
  redis: Awaited<ReturnType<typeof startRedisServer>>;
  api: ServiceProcess;
  worker: ServiceProcess;
  /** Chaos started in the background (a restart); awaited before counting. */
  background: Promise<void>[];
}

interface ChaosPlan {
  /** Events committed outside the HTTP stream (the promise covers them too). */
  before?(c: Chaos): Promise<string[]>;
  /** Called before each batch of the stream: the place to break things. */
  during(c: Chaos, batch: number): Promise<void>;
}

const third = Math.floor(EVENTS / BATCH / 3);

async function runChaos(name: string, plan: ChaosPlan): Promise<void> {
  const redis = await startRedisServer();
  const orgId = randomUUID();
  const { key } = await issueApiKey(db, { orgId, name: 'chaos', role: 'admin', permissions: [] });
  const receiver = await startReceiver(async () => {
    await new Promise((r) => setTimeout(r, 5));
    return { status: 200 };
  });
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: `chaos_${randomBytes(4).toString('hex')}`,
    EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
    EGRESS_EXTRA_CA_FILE: testCa().caFile,
    DELIVERY_RETRY_SCHEDULE: '0,1,1,1,1,1,1,1',
    DELIVERY_TIMEOUT_MS: '2000',
    RECONCILE_INTERVAL_MS: '500',
    NODE_ENV: 'test',
  };
  const c: Chaos = { env, orgId, redis, api: await startServiceProcess('api', env), worker: await startServiceProcess('worker', env), background: [] };
  try {
    const created = await fetch(`http://127.0.0.1:${c.api.port}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'chaos', url: receiver.url(), events: ['*'] }),
    });
    if (created.status !== 201) throw new Error(`webhook create: ${created.status}`);
    const committed = plan.before ? await plan.before(c) : [];
    const accepted = await ingestStream(() => c.api.port, key, (i) => plan.during(c, i));
    await Promise.all(c.background);
    await expectAllDelivered(name, receiver, [...committed, ...accepted]);
  } finally {
    await Promise.allSettled([c.api.kill(), c.worker.kill(), receiver.close()]);
    await redis.close();
  }
}

/** Sends events in batches; returns the ids that were answered 202 (the only ones the promise covers). */
async function ingestStream(port: () => number, key: string, onBatch: (index: number) => Promise<void>): Promise<string[]> {
  const accepted: string[] = [];
  for (let i = 0; i < EVENTS / BATCH; i += 1) {
    await onBatch(i);
    const events = Array.from({ length: BATCH }, () => auditEvent({ id: randomUUID(), action: 'gateway.tool.called', payload: { tool_key: 'chaos' } }));
    try {
      const r = await fetch(`http://127.0.0.1:${port()}/audit-events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      if (r.status === 202) accepted.push(...((await r.json()) as { ids: string[] }).ids);
    } catch {
      // The API was down for this batch: a real client would retry; it was not accepted, so it is not counted.
    }
  }
  return accepted;
}

async function expectAllDelivered(name: string, receiver: TestReceiver, accepted: string[]): Promise<void> {
  const ids = () => receiver.requests.map((q) => (JSON.parse(q.body) as { data: { id: string } }).data.id);
  await receiver.waitFor(() => {
    const seen = new Set(ids());
    return accepted.every((id) => seen.has(id));
  }, 120_000).catch(() => undefined);
  const seen = ids();
  const unique = new Set(seen);
  const lost = accepted.filter((id) => !unique.has(id)).length;
  const duplicated = seen.length - unique.size;
  process.stdout.write(`chaos ${name}: accepted ${accepted.length}, delivered ${unique.size}, lost ${lost}, duplicated ${duplicated}\n`);
  expect(accepted.length).toBeGreaterThan(0);
  expect(lost).toBe(0);
}

describe('chaos: nothing accepted is lost', () => {
  jest.setTimeout(180_000);

  it('worker SIGKILLed mid-stream', () =>
    runChaos('worker SIGKILL', {
      async during(c, batch) {
        if (batch !== third) return;
        await c.worker.kill('SIGKILL');
        c.worker = await startServiceProcess('worker', c.env);
      },
    }));

  it('Redis FLUSHALL mid-stream', () =>
    runChaos('Redis FLUSHALL', {
      async during(c, batch) {
        if (batch === third || batch === 2 * third) await c.redis.flushAll();
      },
    }));

  it('API killed between commit and enqueue, and restarted mid-ingestion', () =>
    runChaos('API restart', {
      // Exactly "committed, never enqueued": the ingestion library without a queue, as a crash right after commit.
      async before(c) {
        const events = Array.from({ length: 20 }, () => auditEvent({ action: 'gateway.tool.called' }) as never);
        return (await ingestAuditEvents({ db }, c.orgId, events)).ids;
      },
      async during(c, batch) {
        if (batch !== Math.floor(EVENTS / BATCH / 2)) return;
        // Killed while the next request is being handled; batches sent while it is down are refused.
        c.background.push(
          (async () => {
            await new Promise((r) => setTimeout(r, 5));
            await c.api.kill('SIGKILL');
            c.api = await startServiceProcess('api', c.env);
          })(),
        );
      },
    }));
});
