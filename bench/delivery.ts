// Delivery figures, each next to its physical limit measured in the same run on the same machine. A real API
// process and a real worker process run on a fresh database and a private Redis, at the service's defaults (only
// what a test deployment must set: addresses, the test CA, 127.0.0.1 allowed, a key); the receivers are HTTPS
// keep-alive servers each in a process of its own (testkit's startReceiverProcess) that count distinct event ids
// (a redelivered event counts once) and report each one's first arrival. The reference of each figure is a bare
// loop in this process doing only the unavoidable part of the same job: render the envelope, sign it with the
// project's signing function and POST it over keep-alive HTTPS to the same receiver process. The references run
// first, on the idle stack.
//
// The headline figures are what a user meets: a fresh webhook per figure and no warm-up, on a stack that has
// done nothing before them but the figures above it in this list:
//  1. a cold burst: 5,000 events to one webhook of a stack that has delivered nothing yet, deliveries/s from the
//     first request's start to the last arrival;
//  2. ingest → receiver latency p50/p95/p99 at 200 single-event requests/s for 10 s (BENCH_SECONDS if longer) on
//     a fresh webhook, the p99 of each of its first seconds, and where it goes (three stages, from the instants
//     the database keeps);
//  3. `ndjson` with max_events 100: 20,000 events to a fresh webhook, events/s from the first request's start to
//     the last arrival;
//  4. 20 fresh healthy webhooks on ONE receiver origin (one path each), 200 events/s spread over them: p99 next to
//     the same with 20 other fresh ones and a 21st webhook on that origin, sent every event, that never answers
//     (the default timeout).
// Then the friendlier figures, named so: end-to-end `single` deliveries/s after a warm-up at saturation, with the
// CPU ms and Postgres round trips each delivery cost (bench/cost.ts); the latency of figure 2 on that warm stack
// and the highest rate of a sweep at which p99 stays within 250 ms; `ndjson` after a warm-up; 2 worker processes
// against 1.
import { randomBytes, randomUUID } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent, request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditEventData } from '@gatehook/core/audit-event';
import { generateSigningSecret } from '@gatehook/core/signing-secret';
import { USER_AGENT } from '@gatehook/core/version';
import { issueApiKey } from '@gatehook/db/api-keys';
import { parseConfig } from '@gatehook/core/config';
import { createDb, sqlPool, type Db } from '@gatehook/db/client';
import { CONTENT_TYPES, packBodies } from '@gatehook/delivery/render/bodies';
import { FANOUT_MERGE_MS } from '@gatehook/delivery/tunables';
import { renderEnvelope } from '@gatehook/delivery/render/envelope';
import { deliveryHeaders } from '@gatehook/delivery/render/signing';
import { createTestDatabase } from '@gatehook/testkit/database';
import { startRedisServer, startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';
import { recordFirstArrivals } from '@gatehook/testkit/arrivals';
import { startReceiver, testCa } from '@gatehook/testkit/receiver';
import { startReceiverProcess, type HangPaths } from '@gatehook/testkit/receiver-process';
import { startRedisCluster } from '@gatehook/testkit/redis-cluster';
import { cpuMs, meter, type Cost, type Service } from './cost';
import { SAMPLE_EVENT } from './expressions';
import { percentile, type Figure } from './measure';

/** The bare loops' requests in flight (the worker's default DELIVERY_CONCURRENCY when this was written). */
export const CONCURRENCY = 50;
/** The product's own per-attempt timeout (DELIVERY_TIMEOUT_MS), which the bench never changes. */
export const DEFAULT_TIMEOUT_MS = parseConfig({ NODE_ENV: 'test' }).DELIVERY_TIMEOUT_MS;
/** Events of the cold burst (figure 1), posted 100 a request from 4 clients. */
const BURST_EVENTS = 5000;
/** Events of the `ndjson` burst (figure 3), posted the same way. */
const NDJSON_BURST_EVENTS = 20_000;
/** Events per second of the latency figures (open loop). */
const LATENCY_RATE = 200;
/**
 * Seconds of the fresh webhook's latency figure (BENCH_SECONDS if longer): a fresh webhook's first seconds are
 * what it measures, so a short BENCH_SECONDS does not shorten it. Its first FRESH_SECONDS_APART seconds of sending
 * each have a figure of their own, the rest one together.
 */
const FRESH_LATENCY_SECONDS = 10;
const FRESH_SECONDS_APART = 5;
/** The latency bar of the sweep, and the rates it tries in turn until p99 passes the bar. */
const SWEEP_P99_MS = 250;
const SWEEP_RATES = [200, 400, 700, 1000, 1500, 2000, 3000];
/** Events per second of the isolation figure, spread over the healthy webhooks (one each). */
const ISOLATION_RATE = 200;
const HEALTHY_ENDPOINTS = 20;
/** Live traffic of the recovery figure (bench/recover.ts). */
export const LIVE_RATE = 50;
/**
 * How long a figure with an endpoint that never answers is measured: past the default timeout and the first retry
 * (5 s later, DELIVERY_RETRY_SCHEDULE), so that the window sees the hanging requests time out and come back.
 */
export const hangWindowSeconds = (seconds: number) => Math.max(seconds, Math.ceil(DEFAULT_TIMEOUT_MS / 1000) + 7);
const NDJSON_MAX_EVENTS = 100;
/**
 * A throughput run warms up until fan-out and delivery (and a fresh worker's JIT) have reached steady state: a
 * fresh worker delivering `single` at saturation takes seconds to ramp up to its settled rate and CPU per delivery,
 * so a short warm-up would measure the ramp.
 */
const throughputWarmupMs = (seconds: number) => Math.max(8000, seconds * 1000);
/** A latency run warms up at its rate, then waits until every warm-up event has arrived. */
const latencyWarmupMs = (seconds: number) => Math.max(1000, seconds * 500);

// The benchmarks' event as the gateway ingests it: id, org_id and created_at are given by the API.
const { id: _id, org_id: _org, created_at: _at, ...EVENT } = SAMPLE_EVENT;
export const ACTION = EVENT.action;
export { EVENT };

export function figure(name: string, value: number, unit: string, reference: string, referenceValue: number): Figure {
  return { figure: name, value, unit, reference, referenceValue, ratio: Number((value / referenceValue).toFixed(4)) };
}

const perSecond = (count: number, ms: number) => Math.round((count / ms) * 1000);

export async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

// --- receivers ------------------------------------------------------------------------------------------------

/** What the throughput measurements read of a receiver: how many distinct events have arrived. */
interface Arrived {
  arrivals: { readonly size: number };
}

export interface CountingReceiver extends Arrived {
  url(path?: string): string;
  /** performance.now() (of this process) of the first arrival of each distinct event id. */
  arrivals: Map<string, number>;
  /** The receiver's own process, when it runs in one (its CPU time is then not this process's). */
  pid?: number;
  close(): Promise<void>;
}

/** Which requests a receiver never answers: all (true), none, or those whose path the function picks. */
export type Hang = boolean | ((path: string) => boolean);

/**
 * An HTTPS receiver answering 200 at once (or never, per `hang`) that records each event id's first arrival at a
 * path that answers. Closing it destroys the sockets of the requests it never answered.
 */
export async function countingReceiver(hang: Hang = false): Promise<CountingReceiver> {
  const arrivals = new Map<string, number>();
  const receiver = await startReceiver((request) => {
    // Bodies are not kept: the first arrival of each id is all a figure needs.
    receiver.requests.length = 0;
    if (hang === true || (typeof hang === 'function' && hang(request.path))) return 'hang';
    recordFirstArrivals(request.body, performance.now(), arrivals);
    return { status: 200 };
  });
  return { url: receiver.url, arrivals, close: () => receiver.close() };
}

// --- the stack: API and worker processes on a fresh database and a private Redis ------------------------------

export interface Org {
  orgId: string;
  /** An admin key of the organisation. */
  key: string;
  /** Creates a webhook for ACTION to `url`; returns its id and signing secret. */
  webhook(url: string, body?: Record<string, unknown>): Promise<{ id: string; secret: string }>;
  /** Ingests `count` copies of `event` (EVENT unless given) in one request; returns their ids. */
  ingest(count: number, event?: typeof EVENT): Promise<string[]>;
  /** Deletes a webhook of the organisation (its work stops). */
  remove(webhookId: string): Promise<void>;
}

export interface Rig {
  /** The API's base URL, the stack's database and its encryption key (for benches that seed history). */
  api: string;
  /** The API process (pid and port), for cost figures. */
  apiProcess: Service;
  databaseUrl: string;
  db: Db;
  /** The pids of the stack's Redis servers (every master of a cluster), for CPU figures. */
  redisPids: number[];
  encryptionKey: string;
  org(): Promise<Org>;
  /** A receiver in this process (what the fairness, recover and tracing groups measure against). */
  receiver(hang?: Hang): Promise<CountingReceiver>;
  /**
   * A receiver in a process of its own (testkit's startReceiverProcess), as a user's receiver is: the delivery
   * figures and their references measure against one, so that the bench's load and its receiver do not share an
   * event loop.
   */
  receiverProcess(hang?: HangPaths): Promise<CountingReceiver>;
  startWorker(env?: Record<string, string>): Promise<ServiceProcess>;
  /**
   * Runs a Postgres CHECKPOINT, so that a figure's halves each start from one rather than one half meeting the
   * checkpoint the WAL of earlier figures sets off (the full-page writes after a checkpoint make commits dearer).
   */
  checkpoint(): Promise<void>;
  /** Replaces the API process with one started with `env` added; `api` and `apiProcess` then name the new one. */
  restartApi(env?: Record<string, string>): Promise<void>;
  stop(service: ServiceProcess): Promise<void>;
}

/** SIGTERM (in-flight work finishes), SIGKILL if it has not exited within 10 s. */
async function stopService(service: ServiceProcess): Promise<void> {
  const timer = setTimeout(() => void service.kill('SIGKILL'), 10_000);
  try {
    await service.kill('SIGTERM');
  } finally {
    clearTimeout(timer);
  }
}

/** Where a stack's Redis is: one private redis-server, or a private 3-master Redis Cluster (no replicas). */
export type RigRedis = 'single' | 'cluster';

/** A private Redis of the kind asked for, the service's settings that point at it, and its servers' pids. */
async function startRigRedis(
  kind: RigRedis,
): Promise<{ env: Record<string, string>; pids: number[]; close(): Promise<void> }> {
  if (kind === 'cluster') {
    const cluster = await startRedisCluster({ masters: 3 });
    return {
      env: { REDIS_CLUSTER_NODES: cluster.seeds.join(',') },
      pids: cluster.masters.map((port) => cluster.pid(port)),
      close: () => cluster.close(),
    };
  }
  const redis = await startRedisServer();
  return { env: { REDIS_URL: redis.url }, pids: [redis.pid], close: () => redis.close() };
}

/** Runs `use` on a fresh stack; every process, receiver, Redis and the database go away whatever happens. */
export async function withRig<T>(use: (rig: Rig) => Promise<T>, redisKind: RigRedis = 'single'): Promise<T> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const db = createDb(database.url, { poolSize: 2 });
    cleanups.push(() => db.$disconnect());
    const redis = await startRigRedis(redisKind);
    cleanups.push(() => redis.close());
    const services = new Set<ServiceProcess>();
    cleanups.push(() => Promise.allSettled([...services].map(stopService)));
    const receivers: CountingReceiver[] = [];
    cleanups.push(() => Promise.allSettled(receivers.map((r) => r.close())));

    const env = {
      DATABASE_URL: database.url,
      ...redis.env,
      REDIS_PREFIX: `bench_${randomBytes(4).toString('hex')}`,
      EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
      EGRESS_EXTRA_CA_FILE: testCa().caFile,
      NODE_ENV: 'production',
      GATEHOOK_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
    };
    const start = async (app: 'api' | 'worker', extra: Record<string, string> = {}) => {
      const service = await startServiceProcess(app, { ...env, ...extra });
      services.add(service);
      return service;
    };
    let apiProcess = await start('api');
    let api = `http://127.0.0.1:${apiProcess.port}`;
    // A lean keep-alive client (node:http rather than fetch), so the load the bench makes costs it little CPU.
    const apiAgent = new HttpAgent({ keepAlive: true, maxSockets: 256 });
    cleanups.push(async () => apiAgent.destroy());
    const call = (key: string, path: string, body: unknown, expected: number, method = 'POST') =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const payload = body === undefined ? '' : JSON.stringify(body);
        const req = httpRequest(
          `${api}${path}`,
          {
            method,
            agent: apiAgent,
            headers: {
              authorization: `Bearer ${key}`,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(payload),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('error', reject);
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              if (res.statusCode !== expected) reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
              else resolve(text === '' ? {} : (JSON.parse(text) as Record<string, unknown>));
            });
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    return await use({
      get api() {
        return api;
      },
      get apiProcess() {
        return apiProcess;
      },
      databaseUrl: database.url,
      db,
      redisPids: redis.pids,
      encryptionKey: env.GATEHOOK_ENCRYPTION_KEY,
      async org() {
        const orgId = randomUUID();
        const { key } = await issueApiKey(sqlPool(db), { orgId, name: 'bench', role: 'admin', permissions: [] });
        return {
          orgId,
          key,
          async webhook(url, body = {}) {
            const created = await call(key, '/webhooks', { name: 'bench', url, events: [ACTION], ...body }, 201);
            return { id: created.id as string, secret: created.secret as string };
          },
          async ingest(count, event = EVENT) {
            return (await call(key, '/audit-events', { events: Array.from({ length: count }, () => event) }, 202))
              .ids as string[];
          },
          async remove(webhookId) {
            await call(key, `/webhooks/${webhookId}`, undefined, 204, 'DELETE');
          },
        };
      },
      async receiver(hang) {
        const receiver = await countingReceiver(hang);
        receivers.push(receiver);
        return receiver;
      },
      async receiverProcess(hang) {
        const receiver = await startReceiverProcess({ hang });
        receivers.push(receiver);
        return receiver;
      },
      startWorker: (extra) => start('worker', extra),
      async checkpoint() {
        await sqlPool(db).query('CHECKPOINT');
      },
      async restartApi(extra) {
        services.delete(apiProcess);
        await stopService(apiProcess);
        apiProcess = await start('api', extra);
        api = `http://127.0.0.1:${apiProcess.port}`;
      },
      async stop(service) {
        services.delete(service);
        await stopService(service);
      },
    });
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}

// --- the bare reference loop ----------------------------------------------------------------------------------

/** Renders, signs and POSTs bodies of `eventsPerBody` fresh events to one receiver over keep-alive HTTPS. */
export class BareSender {
  // Idle sockets are dropped before the receiver's keep-alive timeout (Node's 5 s), as the egress client does.
  private readonly agent = new Agent({
    keepAlive: true,
    maxSockets: CONCURRENCY,
    timeout: 4_000,
    ca: testCa().pki.caPem,
  });
  private readonly url: URL;
  private readonly contentType: string;

  constructor(
    url: string,
    private readonly secret: string,
    private readonly eventsPerBody = 1,
  ) {
    this.url = new URL(url);
    this.contentType = CONTENT_TYPES[eventsPerBody === 1 ? 'single' : 'ndjson'];
  }

  /**
   * One request; resolves to the ids of its events once the answer has been read. A request written into a reused
   * keep-alive socket that the receiver was closing fails with a reset before any answer: it is sent once more on
   * a fresh socket, as any HTTP client would, instead of failing the whole run.
   */
  async send(): Promise<string[]> {
    try {
      return await this.sendOnce();
    } catch (error) {
      const { code } = error as NodeJS.ErrnoException;
      if ((error as { reusedSocket?: boolean }).reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE'))
        return this.sendOnce();
      throw error;
    }
  }

  private async sendOnce(): Promise<string[]> {
    const created_at = new Date().toISOString();
    const events = Array.from({ length: this.eventsPerBody }, () => {
      const event: AuditEventData = { ...EVENT, id: randomUUID(), org_id: SAMPLE_EVENT.org_id, created_at };
      return { eventId: event.id, json: renderEnvelope(event) };
    });
    const body =
      this.eventsPerBody === 1 ? events[0]!.json : packBodies('ndjson', events, this.eventsPerBody).bodies[0]!.body;
    const headers = deliveryHeaders({
      deliveryId: randomUUID(),
      timestampSeconds: Math.floor(Date.now() / 1000),
      body,
      secrets: [this.secret],
      contentType: this.contentType,
      userAgent: USER_AGENT,
      custom: {},
    });
    await new Promise<void>((resolve, reject) => {
      const req = request(
        this.url,
        { method: 'POST', agent: this.agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          res.on('error', reject);
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
        },
      );
      req.on('error', (error) => reject(Object.assign(error, { reusedSocket: req.reusedSocket })));
      req.end(body);
    });
    return events.map((e) => e.eventId);
  }

  close(): void {
    this.agent.destroy();
  }
}

// --- measurements ---------------------------------------------------------------------------------------------

/** Called when a measurement window opens; the function it returns is called when it closes, with the count. */
type WindowProbe = () => Promise<(arrived: number) => Promise<void>>;

/**
 * Distinct events per second arriving at `receiver` over `seconds`, after a warm-up, while `feed` keeps the
 * pipeline busy until told to stop. `feed` returns how many events it handed over, so the caller can wait for
 * the backlog to drain and the next measurement starts on an idle stack. `probe` sees the window itself.
 */
export async function arrivalsPerSecond(
  receiver: Arrived,
  seconds: number,
  feed: (running: () => boolean) => Promise<number>,
  probe?: WindowProbe,
  warmupMs = throughputWarmupMs(seconds),
): Promise<number> {
  let running = true;
  const fed = feed(() => running);
  // A feed that fails early is reported by the `await fed` below, not as an unhandled rejection meanwhile.
  fed.catch(() => undefined);
  try {
    await sleep(warmupMs);
    const closeWindow = await probe?.();
    const before = receiver.arrivals.size;
    const started = performance.now();
    await sleep(seconds * 1000);
    const arrived = receiver.arrivals.size - before;
    const elapsed = performance.now() - started;
    await closeWindow?.(arrived);
    return perSecond(arrived, elapsed);
  } finally {
    running = false;
    // A feed that failed (the API refused events) fails the figure instead of leaving a backlog to the next one.
    const total = await fed;
    await waitUntil(() => receiver.arrivals.size >= total, 60_000);
  }
}

/** Keeps up to `backlog` ingested events undelivered, `eventsPerRequest` per POST from `clients` clients. */
export function ingestFeed(org: Org, receiver: Arrived, eventsPerRequest: number, backlog: number, clients = 4) {
  return async (running: () => boolean) => {
    const base = receiver.arrivals.size;
    let accepted = 0;
    const client = async () => {
      while (running()) {
        if (accepted - (receiver.arrivals.size - base) >= backlog) await sleep(2);
        else {
          const ids = await org.ingest(eventsPerRequest);
          accepted += ids.length;
        }
      }
    };
    await Promise.all(Array.from({ length: clients }, client));
    return base + accepted;
  };
}

/** CONCURRENCY bare senders back to back. */
function bareFeed(sender: BareSender, receiver: CountingReceiver) {
  return async (running: () => boolean) => {
    let sent = receiver.arrivals.size;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (running()) {
          const ids = await sender.send();
          sent += ids.length;
        }
      }),
    );
    return sent;
  };
}

/** An event of an open loop and when its request started (performance.now() of this process). */
interface Sent {
  id: string;
  sent: number;
}

/**
 * Open loop: `fire` is called `rate` times a second on schedule, whether or not earlier calls have finished, and
 * resolves to the event ids it started and when. Resolves once every call has.
 */
async function openLoop(rate: number, seconds: number, fire: () => Promise<string[]>): Promise<Sent[]> {
  const total = Math.round(rate * seconds);
  const started = performance.now();
  const calls: Promise<Sent[]>[] = [];
  for (let i = 0; i < total; i += 1) {
    const wait = started + (i * 1000) / rate - performance.now();
    if (wait > 1) await sleep(wait);
    const sent = performance.now();
    calls.push(fire().then((ids) => ids.map((id) => ({ id, sent }))));
  }
  return (await Promise.all(calls)).flat();
}

/** How an open-loop latency measurement starts and ends. */
export interface OpenLoopOptions {
  /** Seconds at the rate before the measured events, whose arrival is awaited (default latencyWarmupMs). */
  warmupSeconds?: number;
  /** The longest wait for the measured events to arrive (default 30 s); see {@link Latencies} for one that has not. */
  settleMs?: number;
}

/**
 * Ingest → receiver latencies (ms, ascending). An event that had not arrived when the wait for it ended counts as
 * the time it had waited by then, a lower bound, so that a loss shows in the percentiles as a finite number
 * (results are JSON); `missing` says how many did.
 */
export type Latencies = number[] & { missing: number };

/** What a figure's note says of the events of {@link Latencies} that had not arrived, if any did not. */
export function missingNote(latencies: Latencies): string {
  return latencies.missing === 0
    ? ''
    : `; ${latencies.missing.toLocaleString('en-US')} of ${latencies.length.toLocaleString('en-US')} had not arrived when the wait ended, counted as the time waited (a lower bound)`;
}

/**
 * The events of `seconds` of an open loop after a warm-up, once each has arrived at every receiver (or the settle
 * time has passed): `latencies` from each event's start to its first arrival at each receiver, the events, and
 * when the wait ended (what a missing event's latency counts up to).
 */
async function timedArrivals(
  receivers: CountingReceiver[],
  rate: number,
  seconds: number,
  fire: () => Promise<string[]>,
  options: OpenLoopOptions = {},
): Promise<{ latencies: Latencies; sent: Sent[]; ended: number }> {
  const settle = async (sent: { id: string }[]) => {
    await waitUntil(() => receivers.every((r) => sent.every((s) => r.arrivals.has(s.id))), options.settleMs ?? 30_000);
  };
  await settle(await openLoop(rate, options.warmupSeconds ?? latencyWarmupMs(seconds) / 1000, fire));
  const sent = await openLoop(rate, seconds, fire);
  await settle(sent);
  const ended = performance.now();
  let missing = 0;
  const latencies = receivers.flatMap((r) =>
    sent.map((s) => {
      const arrived = r.arrivals.get(s.id);
      if (arrived === undefined) missing += 1;
      return (arrived ?? ended) - s.sent;
    }),
  );
  return {
    latencies: Object.assign(
      latencies.sort((a, b) => a - b),
      { missing },
    ),
    sent,
    ended,
  };
}

/** {@link timedArrivals}'s latencies. */
export async function arrivalLatencies(
  receivers: CountingReceiver[],
  rate: number,
  seconds: number,
  fire: () => Promise<string[]>,
  options?: OpenLoopOptions,
): Promise<Latencies> {
  return (await timedArrivals(receivers, rate, seconds, fire, options)).latencies;
}

/**
 * Where an event's ingest → receiver time goes, split at the instants the stack records: its delivery's
 * `created_at` (fan-out's start) and its first attempt's `at` (the request's turn has come), between the request's
 * start and the arrival. Per stage, ms ascending, for the events of `orgId` (one webhook) that arrived; the stages
 * add up to each event's latency (every clock is this machine's).
 */
async function latencyStages(
  db: Db,
  orgId: string,
  receiver: CountingReceiver,
  sent: readonly Sent[],
): Promise<Record<'ingest' | 'fanout' | 'send', number[]>> {
  const since = new Date(performance.timeOrigin + Math.min(...sent.map((s) => s.sent)) - 1000);
  const { rows } = await sqlPool(db).query<{ id: string; fanned: number; attempted: number | null }>({
    text: `SELECT de.id::text AS id, date_part('epoch', d.created_at) * 1000 AS fanned,
             (SELECT date_part('epoch', min(a.at)) * 1000 FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempted
           FROM deliveries d CROSS JOIN LATERAL unnest(d.event_ids) AS de(id)
           WHERE d.org_id = $1 AND d.created_at >= $2 AND de.id = ANY($3::uuid[])`,
    values: [orgId, since, sent.map((s) => s.id)],
  });
  const startedAt = new Map(sent.map((s) => [s.id, performance.timeOrigin + s.sent]));
  const stages = { ingest: [] as number[], fanout: [] as number[], send: [] as number[] };
  for (const row of rows) {
    const arrived = receiver.arrivals.get(row.id);
    if (arrived === undefined || row.attempted === null) continue;
    stages.ingest.push(row.fanned - startedAt.get(row.id)!);
    stages.fanout.push(row.attempted - row.fanned);
    stages.send.push(performance.timeOrigin + arrived - row.attempted);
  }
  for (const values of Object.values(stages)) values.sort((a, b) => a - b);
  return stages;
}

export const ms = (value: number) => Number(value.toFixed(2));

// --- the figures ----------------------------------------------------------------------------------------------

/** The highest rate of SWEEP_RATES at which p99 stays within SWEEP_P99_MS (0 if even the first does not). */
async function sustainableRate(
  receiver: CountingReceiver,
  seconds: number,
  fire: () => Promise<string[]>,
): Promise<{ rate: number; p99AtRate: number; firstFailing: string }> {
  let best = { rate: 0, p99AtRate: Infinity, firstFailing: 'none of the rates tried' };
  for (const rate of SWEEP_RATES) {
    const p99 = percentile(await arrivalLatencies([receiver], rate, seconds, fire), 99);
    if (p99 > SWEEP_P99_MS) return { ...best, firstFailing: `${rate}/s: p99 ${ms(p99)} ms` };
    best = { rate, p99AtRate: p99, firstFailing: best.firstFailing };
  }
  return best;
}

function costFigures(cost: Cost, delivered: number, bareCpuMsPerRequest: number): Figure[] {
  const per = 'per end-to-end single delivery (lower is better)';
  const totalCpu = Number((cost.apiCpuMs + cost.workerCpuMs + cost.postgresCpuMs).toFixed(3));
  const bare = `bare loop: CPU ms per signed POST of its sender (this process) and the receiver process, same run`;
  const counted = (name: string, value: number): Figure => ({
    figure: `${name} ${per}`,
    value,
    unit: 'statements',
    reference: null,
    referenceValue: null,
    ratio: null,
    note: `over ${delivered.toLocaleString('en-US')} deliveries`,
  });
  return [
    figure(`CPU ms ${per}: API + worker + Postgres`, totalCpu, 'ms', bare, bareCpuMsPerRequest),
    figure(`CPU ms ${per}: worker alone`, cost.workerCpuMs, 'ms', bare, bareCpuMsPerRequest),
    figure(
      `CPU ms ${per}: API alone (ingestion, 100 events a request)`,
      cost.apiCpuMs,
      'ms',
      bare,
      bareCpuMsPerRequest,
    ),
    figure(`CPU ms ${per}: Postgres alone`, cost.postgresCpuMs, 'ms', bare, bareCpuMsPerRequest),
    counted('Postgres round trips (statements) of the worker', cost.workerStatements),
    counted('Postgres round trips (statements) of the API', cost.apiStatements),
  ];
}

/**
 * Figures 1 and 3: `events` events to one webhook, posted 100 a request from 4 clients as fast as the API accepts
 * them. Events/s from the first request's start to the last arrival (over the events that arrived within two
 * minutes; the note says if any did not).
 */
async function burst(org: Org, receiver: CountingReceiver, events: number): Promise<{ value: number; note?: string }> {
  let requests = Math.ceil(events / 100);
  const ids: string[] = [];
  const started = performance.now();
  const client = async () => {
    while (requests > 0) {
      requests -= 1;
      ids.push(...(await org.ingest(100)));
    }
  };
  await Promise.all(Array.from({ length: 4 }, client));
  // Checked every 20 ms over up to 20,000 ids: the check resumes at the first id it has not seen arrive.
  let waiting = 0;
  const all = await waitUntil(() => {
    while (waiting < ids.length && receiver.arrivals.has(ids[waiting]!)) waiting += 1;
    return waiting === ids.length;
  }, 120_000);
  const arrived = ids.map((id) => receiver.arrivals.get(id)).filter((at): at is number => at !== undefined);
  const value = perSecond(arrived.length, Math.max(...arrived) - started);
  return all
    ? { value }
    : {
        value,
        note: `${arrived.length.toLocaleString('en-US')} of ${ids.length.toLocaleString('en-US')} arrived within 120 s`,
      };
}

/**
 * The latencies of the events sent in each second of an open loop (the first `apart` seconds one by one, the rest
 * together), ascending; an event that has not arrived counts as the time it waited until `ended`.
 */
function latenciesBySecond(
  receiver: CountingReceiver,
  sent: readonly Sent[],
  ended: number,
  apart: number,
): { seconds: string; latencies: number[] }[] {
  const first = Math.min(...sent.map((s) => s.sent));
  const buckets = Array.from({ length: apart + 1 }, () => [] as number[]);
  for (const s of sent)
    buckets[Math.min(apart, Math.floor((s.sent - first) / 1000))]!.push(
      (receiver.arrivals.get(s.id) ?? ended) - s.sent,
    );
  const last = Math.ceil((Math.max(...sent.map((s) => s.sent)) - first) / 1000);
  return buckets
    .map((latencies, i) => ({
      seconds: i < apart ? `second ${i + 1}` : `seconds ${apart + 1} to ${last}`,
      latencies: latencies.sort((a, b) => a - b),
    }))
    .filter((bucket) => bucket.latencies.length > 0);
}

/**
 * Figure 4: HEALTHY_ENDPOINTS fresh webhooks of a fresh organisation on one receiver origin, one path each,
 * ISOLATION_RATE events/s spread over them (a condition on `payload.subject` routes each event to one), then the
 * same with HEALTHY_ENDPOINTS other fresh webhooks of another fresh organisation on the same paths and a 21st on
 * that origin that gets every event and never answers; no warm-up in either half. Both halves last
 * hangWindowSeconds (the default timeout and a retry) and start right after a Postgres checkpoint: the WAL of
 * the earlier figures otherwise sets off a checkpoint at a moment of its own, and the full-page images written
 * after one make every commit dearer for a while (+6 to +25 ms on the p99 of the half it falls in, measured), so a
 * checkpoint in one half only decided the ratio more than the hanging webhook did. Healthy ingest → receiver
 * latencies (ms, ascending). The hanging webhook is deleted and the origin's process closed (its hanging requests
 * cut) before it returns, so that the figures after it do not share the worker with them.
 */
async function sharedOriginIsolation(rig: Rig, seconds: number): Promise<{ without: Latencies; withHang: Latencies }> {
  const origin = await rig.receiverProcess(['/never']);
  const window = hangWindowSeconds(seconds);
  const half = async (hanging: boolean) => {
    const org = await rig.org();
    for (let i = 0; i < HEALTHY_ENDPOINTS; i += 1)
      await org.webhook(origin.url(`/healthy-${i}`), { condition: `event.payload.subject == "healthy-${i}"` });
    const never = hanging ? await org.webhook(origin.url('/never')) : undefined;
    let next = 0;
    const spread = () =>
      org.ingest(1, { ...EVENT, payload: { ...EVENT.payload, subject: `healthy-${next++ % HEALTHY_ENDPOINTS}` } });
    await rig.checkpoint();
    const latencies = await arrivalLatencies([origin], ISOLATION_RATE, window, spread, {
      warmupSeconds: 0,
      ...(hanging ? { settleMs: 2 * DEFAULT_TIMEOUT_MS } : {}),
    });
    if (never) await org.remove(never.id);
    return latencies;
  };
  try {
    const without = await half(false);
    const withHang = await half(true);
    return { without, withHang };
  } finally {
    await origin.close();
  }
}

const BARE_SINGLE = `bare render + sign + keep-alive HTTPS POST loop, ${CONCURRENCY} in flight`;
const bareLatencyName = (p: number) =>
  `bare render + sign + HTTPS POST p${p} at ${LATENCY_RATE} req/s, start → arrival`;

/** Every delivery figure; one stack, torn down at the end whatever happens. */
export async function deliveryFigures(seconds: number): Promise<Figure[]> {
  return withRig(async (rig) => {
    const worker = await rig.startWorker();
    const receiver = await rig.receiverProcess();
    const figures: Record<'headline' | 'throughput' | 'cost' | 'latency' | 'ndjson' | 'workers', Figure[]> = {
      headline: [],
      throughput: [],
      cost: [],
      latency: [],
      ndjson: [],
      workers: [],
    };
    const warm = `after ${throughputWarmupMs(seconds) / 1000} s of warm-up at saturation`;
    const bareSingle = new BareSender(receiver.url('/bare'), generateSigningSecret());
    const bareNdjson = new BareSender(receiver.url('/bare-ndjson'), generateSigningSecret(), NDJSON_MAX_EVENTS);
    try {
      // The references first, on the idle stack: the bare loops against the receiver process.
      let bareCpuMs = 0;
      let bareRequests = 0;
      const bareRate = await arrivalsPerSecond(receiver, seconds, bareFeed(bareSingle, receiver), async () => {
        const before = process.cpuUsage();
        const receiverBefore = cpuMs(receiver.pid!);
        return async (arrived) => {
          const used = process.cpuUsage(before);
          bareCpuMs = (used.user + used.system) / 1000 + cpuMs(receiver.pid!) - receiverBefore;
          bareRequests = arrived;
        };
      });
      const bare = await arrivalLatencies([receiver], LATENCY_RATE, seconds, () => bareSingle.send());
      const bareP = (p: number) => ms(percentile(bare, p));
      const bareNdjsonRate = await arrivalsPerSecond(receiver, seconds, bareFeed(bareNdjson, receiver));
      const bareNdjsonName = `bare render + sign + POST of ${NDJSON_MAX_EVENTS}-event ndjson bodies, ${CONCURRENCY} in flight`;

      // 1: the cold burst: the API and the worker have done nothing but create its webhook.
      const coldOrg = await rig.org();
      await coldOrg.webhook(receiver.url('/burst'));
      const cold = await burst(coldOrg, receiver, BURST_EVENTS);
      figures.headline.push({
        ...figure(
          `cold burst: deliveries/s of ${BURST_EVENTS.toLocaleString('en-US')} events to a fresh webhook, first request's start → last arrival (fresh API + 1 worker, no warm-up; 100 events a POST /audit-events from 4 clients; bar: 0.25)`,
          cold.value,
          'deliveries/s',
          BARE_SINGLE,
          bareRate,
        ),
        ...(cold.note ? { note: cold.note } : {}),
      });

      // 2: latency on a fresh webhook, no warm-up.
      const freshSeconds = Math.max(seconds, FRESH_LATENCY_SECONDS);
      const freshOrg = await rig.org();
      await freshOrg.webhook(receiver.url('/fresh'));
      const fresh = await timedArrivals([receiver], LATENCY_RATE, freshSeconds, () => freshOrg.ingest(1), {
        warmupSeconds: 0,
      });
      const freshName = `fresh webhook, no warm-up: ingest → receiver latency at ${LATENCY_RATE} single-event requests/s for ${freshSeconds} s, single (1 worker`;
      for (const p of [50, 95, 99]) {
        figures.headline.push({
          ...figure(
            `${freshName}), p${p}${p === 99 ? ' (bar: 100 ms)' : ''} (lower is better)`,
            ms(percentile(fresh.latencies, p)),
            'ms',
            bareLatencyName(p),
            bareP(p),
          ),
          ...(p === 99
            ? {
                note: `max ${ms(fresh.latencies.at(-1)!)} ms over ${fresh.latencies.length.toLocaleString('en-US')} events${missingNote(fresh.latencies)}`,
              }
            : {}),
        });
      }
      for (const { seconds: when, latencies } of latenciesBySecond(
        receiver,
        fresh.sent,
        fresh.ended,
        FRESH_SECONDS_APART,
      )) {
        figures.headline.push({
          ...figure(
            `${freshName}), p99 of the events sent in its ${when} (lower is better)`,
            ms(percentile(latencies, 99)),
            'ms',
            bareLatencyName(99),
            bareP(99),
          ),
          note: `p50 ${ms(percentile(latencies, 50))} ms over ${latencies.length} events`,
        });
      }
      // Where that latency goes: each stage's p50 as a share of the whole's p50, with its p99 beside it.
      const stages = await latencyStages(rig.db, freshOrg.orgId, receiver, fresh.sent);
      const stageNames = {
        ingest: `start → fan-out started (the API parses and commits; the enqueue, merged for up to ${FANOUT_MERGE_MS} ms; BullMQ hands the job over)`,
        fanout:
          'fan-out started → first attempt started (events read, rendered, sealed; deliveries committed; a place and an origin slot)',
        send: 'first attempt started → arrival (signing, the HTTPS POST)',
      } as const;
      for (const [stage, name] of Object.entries(stageNames) as [keyof typeof stageNames, string][]) {
        figures.headline.push({
          ...figure(
            `${freshName}), p50 of one stage: ${name} (lower is better)`,
            ms(percentile(stages[stage], 50)),
            'ms',
            'ingest → receiver p50, same events',
            ms(percentile(fresh.latencies, 50)),
          ),
          note: `p99 ${ms(percentile(stages[stage], 99))} ms over ${stages[stage].length} events`,
        });
      }

      // 3: `ndjson`, 100 events a body, on a fresh webhook, no warm-up.
      const ndjsonBurstOrg = await rig.org();
      await ndjsonBurstOrg.webhook(receiver.url('/ndjson-burst'), { format: 'ndjson', max_events: NDJSON_MAX_EVENTS });
      const ndjsonBurst = await burst(ndjsonBurstOrg, receiver, NDJSON_BURST_EVENTS);
      figures.headline.push({
        ...figure(
          `fresh webhook, no warm-up: end-to-end events/s of ${NDJSON_BURST_EVENTS.toLocaleString('en-US')} events, ndjson max_events ${NDJSON_MAX_EVENTS}, first request's start → last arrival (API + 1 worker; 100 events a POST /audit-events from 4 clients)`,
          ndjsonBurst.value,
          'events/s',
          bareNdjsonName,
          bareNdjsonRate,
        ),
        ...(ndjsonBurst.note ? { note: ndjsonBurst.note } : {}),
      });

      // 4: isolation on one origin, fresh webhooks in each half.
      const { without, withHang } = await sharedOriginIsolation(rig, seconds);
      const healthy = `fresh webhooks, no warm-up: ${HEALTHY_ENDPOINTS} healthy webhooks on one receiver origin (one path each): p99 at ${ISOLATION_RATE} events/s spread over them`;
      figures.headline.push(
        figure(
          `${healthy} (1 worker; lower is better)`,
          ms(percentile(without, 99)),
          'ms',
          `${bareLatencyName(99)}, one receiver, same run`,
          bareP(99),
        ),
        {
          ...figure(
            `${healthy}, while a 21st webhook on the same origin, sent every event, never answers (default ${DEFAULT_TIMEOUT_MS / 1000} s timeout; bar: 1.5 × without; lower is better)`,
            ms(percentile(withHang, 99)),
            'ms',
            'same webhooks p99 without it, same run',
            ms(percentile(without, 99)),
          ),
          note: `each half ${hangWindowSeconds(seconds)} s of fresh webhooks, from a fresh Postgres checkpoint; max ${ms(withHang.at(-1)!)} ms, without it ${ms(without.at(-1)!)} ms${missingNote(withHang)}`,
        },
      );

      // The friendlier figures, each named so: `single` after a warm-up, and the latency on that warm stack.
      const single = await rig.org();
      await single.webhook(receiver.url('/single'));
      let cost: Cost | undefined;
      let delivered = 0;
      const oneWorker = await arrivalsPerSecond(
        receiver,
        seconds,
        ingestFeed(single, receiver, 100, 2000),
        async () => {
          const window = await meter(rig.apiProcess, [worker], rig.db);
          return async (arrived) => {
            delivered = arrived;
            cost = await window.end(arrived);
          };
        },
      );
      figures.throughput.push(
        figure(
          `end-to-end deliveries/s, single (API + 1 worker, ${warm}; 100 events a POST /audit-events from 4 clients meanwhile)`,
          oneWorker,
          'deliveries/s',
          BARE_SINGLE,
          bareRate,
        ),
      );
      figures.cost.push(...costFigures(cost!, delivered, Number((bareCpuMs / Math.max(1, bareRequests)).toFixed(3))));

      const warmLatency = await arrivalLatencies([receiver], LATENCY_RATE, seconds, () => single.ingest(1));
      for (const p of [50, 99]) {
        figures.latency.push(
          figure(
            `ingest → receiver latency p${p} at ${LATENCY_RATE} single-event requests/s, single (1 worker, warm stack: after the saturated figure and ${latencyWarmupMs(seconds) / 1000} s at the rate; lower is better)`,
            ms(percentile(warmLatency, p)),
            'ms',
            bareLatencyName(p),
            bareP(p),
          ),
        );
      }
      const sweep = await sustainableRate(receiver, seconds, () => single.ingest(1));
      figures.latency.push({
        figure: `highest rate of single-event requests/s (of ${SWEEP_RATES.join(', ')}) at which ingest → receiver p99 stays ≤ ${SWEEP_P99_MS} ms (warm stack)`,
        value: sweep.rate,
        unit: 'events/s',
        reference: 'end-to-end deliveries/s after warm-up (saturated), same run',
        referenceValue: oneWorker,
        ratio: Number((sweep.rate / oneWorker).toFixed(4)),
        note: `first failing: ${sweep.firstFailing}`,
      });

      // `ndjson` after a warm-up, 1,000 events a request.
      const ndjson = await rig.org();
      await ndjson.webhook(receiver.url('/ndjson'), { format: 'ndjson', max_events: NDJSON_MAX_EVENTS });
      const ndjsonWarm = await arrivalsPerSecond(receiver, seconds, ingestFeed(ndjson, receiver, 1000, 20_000));
      figures.ndjson.push(
        figure(
          `end-to-end events/s, ndjson max_events ${NDJSON_MAX_EVENTS} (API + 1 worker, ${warm}; 1000 events a POST /audit-events; bar: 20,000)`,
          ndjsonWarm,
          'events/s',
          bareNdjsonName,
          bareNdjsonRate,
        ),
      );

      const second = await rig.startWorker();
      const twoWorkers = await arrivalsPerSecond(receiver, seconds, ingestFeed(single, receiver, 100, 4000));
      await rig.stop(second);
      figures.workers.push(
        figure(
          `end-to-end deliveries/s with 2 worker processes, single (${warm})`,
          twoWorkers,
          'deliveries/s',
          '1 worker process, same run',
          oneWorker,
        ),
      );
    } finally {
      bareSingle.close();
      bareNdjson.close();
    }
    return [
      ...figures.headline,
      ...figures.throughput,
      ...figures.cost,
      ...figures.latency,
      ...figures.ndjson,
      ...figures.workers,
    ];
  });
}
