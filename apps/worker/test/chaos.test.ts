import { randomBytes, randomUUID } from 'node:crypto';
import { issueApiKey } from '@gatehook/db/api-keys';
import { createDb, sqlPool, type Db } from '@gatehook/db/client';
import { applyMigrations } from '@gatehook/db/migrate';
import { ingestAuditEvents } from '@gatehook/delivery';
import { createTestDatabase } from '@gatehook/testkit/database';
import {
  startPostgresServer,
  startRedisServer,
  startServiceProcess,
  type PostgresServer,
  type ServiceProcess,
} from '@gatehook/testkit/processes';
import { startReceiver, testCa, type TestReceiver } from '@gatehook/testkit/receiver';
import { startRedisCluster, type TestRedisCluster } from '@gatehook/testkit/redis-cluster';
import { auditEvent } from '@gatehook/testkit/stack';

// Chaos at 2,000 events a scenario (CHAOS_EVENTS changes it): real API and worker processes, a private Redis
// server (one API and one worker) or a private 3-master Redis Cluster with a replica per master (two APIs, the
// stream alternating between them, and two workers, throughout), and a receiver that counts event ids.
// `pnpm test:chaos` runs only these. Each scenario prints its lost and duplicated counts.
const EVENTS = Number(process.env.CHAOS_EVENTS ?? 2000);
const BATCH = 10;
/** No ingestion request may take longer than this, whatever is broken behind the API. */
const ANSWER_BOUND_MS = 10_000;
/** A batch the API did not accept is sent again, as a gateway would, this many times at most, RESEND_GAP_MS apart. */
const RESENDS = 40;
const RESEND_GAP_MS = 250;

/** One chaos run: a private Redis, API and worker processes, a webhook to a receiver that counts event ids. */
interface Chaos {
  env: Record<string, string>;
  orgId: string;
  /** The run's private Redis server (absent when the plan runs on a cluster). */
  redis?: Awaited<ReturnType<typeof startRedisServer>>;
  /** The run's private Redis Cluster, when the plan asked for one. */
  cluster?: TestRedisCluster;
  /** The run's private Postgres server, when the plan asked for one. */
  postgres?: PostgresServer;
  /** The API processes (two on a cluster): batch i of the stream goes to apis[i % apis.length]. */
  apis: ServiceProcess[];
  /** The worker processes (two on a cluster). */
  workers: ServiceProcess[];
  /** Chaos started in the background (a restart); awaited before counting. */
  background: Promise<void>[];
  /** The run's own database. */
  db: Db;
}

interface ChaosPlan {
  /** Runs on a private Postgres server (c.postgres) instead of the shared one, so the plan may stop it. */
  privatePostgres?: boolean;
  /**
   * Runs on a private Redis Cluster of 3 masters with a replica each (c.cluster) instead of one Redis server, with
   * two APIs and two workers.
   */
  cluster?: boolean;
  /** Events committed outside the HTTP stream (the promise covers them too). */
  before?(c: Chaos): Promise<string[]>;
  /** Called before each batch of the stream: the place to break things. */
  during(c: Chaos, batch: number): Promise<void>;
}

const third = Math.floor(EVENTS / BATCH / 3);

/** What the API answered to one batch of the stream (status 0: no answer within ANSWER_BOUND_MS, or none at all). */
interface Answer {
  batch: number;
  status: number;
  code?: string;
}

/**
 * The database of one run, its own: a freshly migrated one on the machine's server, or on a private server. A
 * worker's reconciler scans its whole database, so a run must not see the events of the runs beside it.
 */
async function chaosDatabase(
  postgres: PostgresServer | undefined,
): Promise<{ url: string; db: Db; close(): Promise<void> }> {
  if (!postgres) {
    const database = await createTestDatabase();
    const own = createDb(database.url, { poolSize: 2 });
    const close = async () => {
      await own.$disconnect();
      await database.drop();
    };
    return { url: database.url, db: own, close };
  }
  const url = `${postgres.url}/gatehook`;
  await applyMigrations(url);
  const own = createDb(url, { poolSize: 1 });
  return { url, db: own, close: () => own.$disconnect() };
}

/** Runs one plan; returns what the API answered to each batch of the stream. */
async function runChaos(name: string, plan: ChaosPlan): Promise<Answer[]> {
  const redis = plan.cluster
    ? { cluster: await startRedisCluster({ masters: 3, replicasPerMaster: 1 }) }
    : { redis: await startRedisServer() };
  let postgres: PostgresServer | undefined;
  try {
    if (plan.privatePostgres) postgres = await startPostgresServer();
    return await runOnServers(name, plan, redis, postgres);
  } finally {
    await Promise.allSettled([redis.redis?.close(), redis.cluster?.close(), postgres?.close()]);
  }
}

async function runOnServers(
  name: string,
  plan: ChaosPlan,
  redis: Pick<Chaos, 'redis' | 'cluster'>,
  postgres: PostgresServer | undefined,
): Promise<Answer[]> {
  const store = await chaosDatabase(postgres);
  const orgId = randomUUID();
  const { key } = await issueApiKey(sqlPool(store.db), { orgId, name: 'chaos', role: 'admin', permissions: [] });
  const receiver = await startReceiver(async () => {
    await new Promise((r) => setTimeout(r, 5));
    return { status: 200 };
  });
  const env = {
    DATABASE_URL: store.url,
    // On a cluster the workers' blocking connections to a failed-over master stop taking jobs until the queue
    // watchdog recreates them: a short watchdog keeps the scenario within its wait.
    ...(redis.redis
      ? { REDIS_URL: redis.redis.url }
      : { REDIS_CLUSTER_NODES: redis.cluster!.seeds.join(','), QUEUE_WATCHDOG_MS: '5000' }),
    REDIS_PREFIX: `chaos_${randomBytes(4).toString('hex')}`,
    EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
    EGRESS_EXTRA_CA_FILE: testCa().caFile,
    DELIVERY_RETRY_SCHEDULE: '0,1,1,1,1,1,1,1',
    DELIVERY_TIMEOUT_MS: '2000',
    RECONCILE_INTERVAL_MS: '500',
    // No scenario breaks the rate limit check: without a gRPC port an API starts without the gRPC path's warm-up
    // (apps/api/src/grpc/warm-up.ts, seconds of CPU on a 2-core machine), which would otherwise run beside the other
    // processes of its scenario and of the other lane at every start and restart.
    GRPC_PORT: '0',
    NODE_ENV: 'test',
  };
  const c: Chaos = {
    env,
    orgId,
    ...redis,
    ...(postgres ? { postgres } : {}),
    apis: [],
    workers: [],
    background: [],
    db: store.db,
  };
  try {
    // Started together; each one that started is in c (and killed below) even if another did not.
    const started = await Promise.allSettled(
      (['api', 'worker'] as const).flatMap((app) =>
        Array.from({ length: redis.cluster ? 2 : 1 }, async () => ({
          app,
          process: await startServiceProcess(app, env),
        })),
      ),
    );
    for (const s of started)
      if (s.status === 'fulfilled') (s.value.app === 'api' ? c.apis : c.workers).push(s.value.process);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const created = await fetch(`http://127.0.0.1:${c.apis[0]!.port}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'chaos', url: receiver.url(), events: ['*'] }),
    });
    if (created.status !== 201) throw new Error(`webhook create: ${created.status}`);
    const committed = plan.before ? await plan.before(c) : [];
    const port = (batch: number) => c.apis[batch % c.apis.length]!.port;
    const stream = await ingestStream(port, key, (i) => plan.during(c, i));
    await Promise.all(c.background);
    // Once the chaos is over, every batch that was not accepted is sent again with the same event ids, as a gateway
    // would: ingestion is idempotent on id, so a batch that was committed but not answered (the API killed
    // mid-request) is not delivered twice for it, and every event of the stream ends up accepted.
    const resent = await resendRefused(port, key, stream);
    const accepted = new Set([...stream.accepted, ...resent.accepted]);
    expect(accepted.size).toBe(stream.answers.length * BATCH);
    await expectAllDelivered(
      `${name} (${stream.refused.size} of ${stream.answers.length} batches sent again)`,
      receiver,
      [...committed, ...accepted],
    );
    // Whatever broke, the API refused with 503 or was not there at all: never another 5xx.
    expect([...stream.answers, ...resent.answers].filter((a) => a.status >= 500 && a.status !== 503)).toEqual([]);
    return stream.answers;
  } finally {
    await Promise.allSettled([
      ...c.apis.map((p) => p.kill()),
      ...c.workers.map((p) => p.kill()),
      receiver.close(),
      store.close(),
    ]);
  }
}

/** What a stream sent: the ids accepted, the API's answer to each batch, and the batches it did not accept. */
interface Sent {
  accepted: string[];
  answers: Answer[];
  /** Batches not accepted, by batch index: their events, to be sent again unchanged. */
  refused: Map<number, unknown[]>;
}

/** POSTs one batch; its answer, with the accepted ids when the API answered 202. */
async function postBatch(
  port: number,
  key: string,
  batch: number,
  events: unknown[],
): Promise<Answer & { ids?: string[] }> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/audit-events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
      signal: AbortSignal.timeout(ANSWER_BOUND_MS),
    });
    const body = (await r.json().catch(() => ({}))) as { ids?: string[]; error?: { code: string } };
    return {
      batch,
      status: r.status,
      ...(body.error ? { code: body.error.code } : {}),
      ...(r.status === 202 ? { ids: body.ids! } : {}),
    };
  } catch {
    // The API was down for this batch, or did not answer in time.
    return { batch, status: 0 };
  }
}

/**
 * Sends events in batches; returns the ids that were answered 202 (the only ones the promise covers), every
 * answer, and the batches answered otherwise (not accepted: a real client sends them again, see resendRefused).
 */
async function ingestStream(
  port: (batch: number) => number,
  key: string,
  onBatch: (index: number) => Promise<void>,
): Promise<Sent> {
  const sent: Sent = { accepted: [], answers: [], refused: new Map() };
  for (let i = 0; i < EVENTS / BATCH; i += 1) {
    await onBatch(i);
    const events = Array.from({ length: BATCH }, () =>
      auditEvent({ id: randomUUID(), action: 'gateway.tool.called', payload: { tool_key: 'chaos' } }),
    );
    const { ids, ...answer } = await postBatch(port(i), key, i, events);
    sent.answers.push(answer);
    if (ids) sent.accepted.push(...ids);
    else sent.refused.set(i, events);
  }
  return sent;
}

/** Sends each refused batch again, unchanged, until the API accepts it (RESENDS tries at most); the ids accepted. */
async function resendRefused(
  port: (batch: number) => number,
  key: string,
  stream: Sent,
): Promise<{ accepted: string[]; answers: Answer[] }> {
  const accepted: string[] = [];
  const answers: Answer[] = [];
  for (const [batch, events] of stream.refused) {
    for (let attempt = 0; attempt < RESENDS; attempt += 1) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, RESEND_GAP_MS));
      const { ids, ...answer } = await postBatch(port(batch + attempt), key, batch, events);
      answers.push(answer);
      if (ids) {
        accepted.push(...ids);
        break;
      }
    }
  }
  return { accepted, answers };
}

async function expectAllDelivered(name: string, receiver: TestReceiver, accepted: string[]): Promise<void> {
  const ids = () => receiver.requests.map((q) => (JSON.parse(q.body) as { data: { id: string } }).data.id);
  await receiver
    .waitFor(() => {
      const seen = new Set(ids());
      return accepted.every((id) => seen.has(id));
    }, 120_000)
    .catch(() => undefined);
  const seen = ids();
  const unique = new Set(seen);
  const lost = accepted.filter((id) => !unique.has(id)).length;
  const duplicated = seen.length - unique.size;
  process.stdout.write(
    `chaos ${name}: accepted ${accepted.length}, delivered ${unique.size}, lost ${lost}, duplicated ${duplicated}\n`,
  );
  expect(accepted.length).toBeGreaterThan(0);
  expect(lost).toBe(0);
}

describe('chaos: nothing accepted is lost', () => {
  // A cluster scenario starts six Redis nodes, two APIs and two workers, and may wait 120 s for the last delivery; a
  // scenario may also wait for the one before it in its lane.
  jest.setTimeout(600_000);
  // Two lanes side by side, each running its scenarios one at a time in the order written: the cluster scenarios
  // in one, the single-server ones in the other. Each scenario has its own Redis, database, receiver and
  // processes, and spends most of its time waiting (for the reconciler's grace, a restart, the last deliveries),
  // so the lanes share the machine without one deciding the other's outcome; two cluster stacks never run at once.
  const lanes = { cluster: oneAtATime(), single: oneAtATime() };
  const scenario = (name: string, lane: keyof typeof lanes, run: () => Promise<unknown>) =>
    it.concurrent(name, () => lanes[lane](async () => void (await run())));

  const workerKill: ChaosPlan['during'] = async (c, batch) => {
    if (batch !== third) return;
    await c.workers[0]!.kill('SIGKILL');
    c.workers[0] = await startServiceProcess('worker', c.env);
  };

  scenario('on a Redis Cluster: one of two workers SIGKILLed mid-stream', 'cluster', () =>
    runChaos('cluster worker SIGKILL', { cluster: true, during: workerKill }),
  );

  scenario('on a Redis Cluster: every master flushed mid-stream, twice', 'cluster', () =>
    runChaos('cluster FLUSHALL of every master', {
      cluster: true,
      async during(c, batch) {
        if (batch === third || batch === 2 * third) expect(await c.cluster!.flushAll()).toHaveLength(3);
      },
    }),
  );

  scenario('on a Redis Cluster: a master killed mid-stream and replaced by its replica', 'cluster', () =>
    runChaos('cluster master failover', {
      cluster: true,
      async during(c, batch) {
        // SIGKILL: whatever the master had not yet replicated is lost with it; its replica takes its slots. The master
        // killed is the one of the periodic queue (the reconciler's scheduler), the hardest to lose.
        if (batch === third) await c.cluster!.kill(await c.cluster!.masterOf(`{${c.env.REDIS_PREFIX}:periodic}`));
      },
    }),
  );

  scenario('worker SIGKILLed mid-stream', 'single', () => runChaos('worker SIGKILL', { during: workerKill }));

  scenario('Redis FLUSHALL mid-stream', 'single', () =>
    runChaos('Redis FLUSHALL', {
      async during(c, batch) {
        if (batch === third || batch === 2 * third) await c.redis!.flushAll();
      },
    }),
  );

  scenario('API killed between commit and enqueue, and restarted mid-ingestion', 'single', () =>
    runChaos('API restart', {
      // Exactly "committed, never enqueued": the ingestion library without a queue, as a crash right after commit.
      async before(c) {
        const events = Array.from({ length: 20 }, () => auditEvent({ action: 'gateway.tool.called' }) as never);
        return (await ingestAuditEvents({ db: c.db }, c.orgId, events)).ids;
      },
      async during(c, batch) {
        if (batch !== Math.floor(EVENTS / BATCH / 2)) return;
        // Killed while the next request is being handled; batches sent while it is down are refused.
        c.background.push(
          (async () => {
            await new Promise((r) => setTimeout(r, 5));
            await c.apis[0]!.kill('SIGKILL');
            c.apis[0] = await startServiceProcess('api', c.env);
          })(),
        );
      },
    }),
  );

  scenario('Postgres restarted mid-stream', 'single', async () => {
    // Down for the middle third of the stream, long enough for reconciler passes and job retries to hit it.
    const down = (batch: number) => batch >= third && batch < 2 * third;
    const answers = await runChaos('Postgres restart', {
      privatePostgres: true,
      async during(c, batch) {
        if (batch === third) await c.postgres!.stop();
        if (batch === 2 * third) {
          await c.postgres!.start();
          // Both processes lived through the outage and see Postgres again.
          for (const p of [...c.apis, ...c.workers])
            expect((await fetch(`http://127.0.0.1:${p.port}/readyz`)).status).toBe(200);
        }
        if (down(batch)) await new Promise((r) => setTimeout(r, 400));
      },
    });
    // While it is down every batch is refused with the contract's 503, promptly; once it is back every one is accepted.
    const whileDown = answers.filter((a) => down(a.batch));
    expect(whileDown.length).toBeGreaterThan(0);
    expect(whileDown.filter((a) => a.status !== 503 || a.code !== 'unavailable')).toEqual([]);
    expect(answers.filter((a) => !down(a.batch) && a.status !== 202)).toEqual([]);
  });
});

/** Runs the functions given to it one at a time, in the order they were given. */
function oneAtATime(): (fn: () => Promise<void>) => Promise<void> {
  let last: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const run = last.catch(() => undefined).then(fn);
    last = run;
    return run;
  };
}
