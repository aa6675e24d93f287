// Delivery figures, each next to its physical limit measured in the same run on the same machine. A real API
// process and real worker processes run on a fresh database and a private Redis; receivers are HTTPS keep-alive
// servers in this process that count distinct event ids (a redelivered event counts once). The reference of each
// figure is a bare loop in this process doing only the unavoidable part of the same job: render the envelope,
// sign it with the project's signing function and POST it over keep-alive HTTPS to the same receiver.
//  1. end-to-end `single` deliveries/s (POST /audit-events → 2xx at the receiver), 1 worker process;
//  2. ingest → receiver latency p50/p99 at a fixed event rate (open loop);
//  3. `ndjson` with max_events 100: events/s;
//  4. healthy endpoints' p99 while another endpoint times out on every attempt, next to the p99 without it;
//  5. 2 worker processes against 1.
import { randomBytes, randomUUID } from 'node:crypto';
import { Agent, request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditEventData } from '@gatehook/core/audit-event';
import { USER_AGENT } from '@gatehook/core/version';
import { issueApiKey } from '@gatehook/db/api-keys';
import { createDb } from '@gatehook/db/client';
import { CONTENT_TYPES, packBodies } from '@gatehook/delivery/bodies';
import { renderEnvelope } from '@gatehook/delivery/envelope';
import { deliveryHeaders } from '@gatehook/delivery/signing';
import { createTestDatabase } from '@gatehook/testkit/database';
import { startRedisServer, startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';
import { startReceiver, testCa } from '@gatehook/testkit/receiver';
import { SAMPLE_EVENT } from './expressions';
import { percentile, type Figure } from './measure';

/** The worker's DELIVERY_CONCURRENCY (its default), and the bare loops' requests in flight. */
const CONCURRENCY = 50;
/** Events per second of the latency figures (open loop). */
const LATENCY_RATE = 200;
/** Events per second of the isolation figure; each reaches every healthy endpoint. */
const ISOLATION_RATE = 50;
const HEALTHY_ENDPOINTS = 2;
const TIMEOUT_MS = 2000;
const NDJSON_MAX_EVENTS = 100;
/** A throughput run warms up until fan-out and delivery (and a fresh worker's JIT) have reached steady state. */
const throughputWarmupMs = (seconds: number) => Math.max(3000, seconds * 1000);
/** A latency run warms up at its rate, then waits until every warm-up event has arrived. */
const latencyWarmupMs = (seconds: number) => Math.max(1000, seconds * 500);

// The benchmarks' event as the gateway ingests it: id, org_id and created_at are given by the API.
const { id: _id, org_id: _org, created_at: _at, ...EVENT } = SAMPLE_EVENT;
const ACTION = EVENT.action;

function figure(name: string, value: number, unit: string, reference: string, referenceValue: number): Figure {
  return { figure: name, value, unit, reference, referenceValue, ratio: Number((value / referenceValue).toFixed(4)) };
}

const perSecond = (count: number, ms: number) => Math.round((count / ms) * 1000);

async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

// --- receivers ------------------------------------------------------------------------------------------------

// Every body is envelopes (one, or one per ndjson line), each starting with its type, timestamp and data.id.
const EVENT_ID = /"data":\{"id":"([0-9a-f-]{36})"/g;

interface CountingReceiver {
  url(path?: string): string;
  /** performance.now() of the first arrival of each distinct event id. */
  arrivals: Map<string, number>;
  close(): Promise<void>;
}

/** An HTTPS receiver answering 200 at once (or never, with `hang`) that records each event id's first arrival. */
async function countingReceiver(hang = false): Promise<CountingReceiver> {
  const arrivals = new Map<string, number>();
  const receiver = await startReceiver((request) => {
    // Bodies are not kept: the first arrival of each id is all a figure needs.
    receiver.requests.length = 0;
    if (hang) return 'hang';
    const at = performance.now();
    for (const [, id] of request.body.matchAll(EVENT_ID)) if (!arrivals.has(id!)) arrivals.set(id!, at);
    return { status: 200 };
  });
  return { url: receiver.url, arrivals, close: () => receiver.close() };
}

// --- the stack: API and worker processes on a fresh database and a private Redis ------------------------------

interface Org {
  /** Creates a webhook for ACTION to `url`; returns its signing secret. */
  webhook(url: string, body?: Record<string, unknown>): Promise<string>;
  /** Ingests `count` events in one request; returns their ids. */
  ingest(count: number): Promise<string[]>;
}

interface Rig {
  org(): Promise<Org>;
  receiver(hang?: boolean): Promise<CountingReceiver>;
  startWorker(env?: Record<string, string>): Promise<ServiceProcess>;
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

/** Runs `use` on a fresh stack; every process, receiver, Redis and the database go away whatever happens. */
async function withRig<T>(use: (rig: Rig) => Promise<T>): Promise<T> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const db = createDb(database.url, { poolSize: 2 });
    cleanups.push(() => db.$disconnect());
    const redis = await startRedisServer();
    cleanups.push(() => redis.close());
    const services = new Set<ServiceProcess>();
    cleanups.push(() => Promise.allSettled([...services].map(stopService)));
    const receivers: CountingReceiver[] = [];
    cleanups.push(() => Promise.allSettled(receivers.map((r) => r.close())));

    const env = {
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: `bench_${randomBytes(4).toString('hex')}`,
      EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
      EGRESS_EXTRA_CA_FILE: testCa().caFile,
      DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
      DELIVERY_CONCURRENCY: String(CONCURRENCY),
      NODE_ENV: 'production',
      GATEHOOK_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
    };
    const start = async (app: 'api' | 'worker', extra: Record<string, string> = {}) => {
      const service = await startServiceProcess(app, { ...env, ...extra });
      services.add(service);
      return service;
    };
    const api = `http://127.0.0.1:${(await start('api')).port}`;
    const call = async (key: string, path: string, body: unknown, expected: number) => {
      const response = await fetch(`${api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (response.status !== expected) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
      return response.json() as Promise<Record<string, unknown>>;
    };
    return await use({
      async org() {
        const { key } = await issueApiKey(db, { orgId: randomUUID(), name: 'bench', role: 'admin', permissions: [] });
        return {
          async webhook(url, body = {}) {
            return (await call(key, '/webhooks', { name: 'bench', url, events: [ACTION], ...body }, 201)).secret as string;
          },
          async ingest(count) {
            return (await call(key, '/audit-events', { events: Array.from({ length: count }, () => EVENT) }, 202)).ids as string[];
          },
        };
      },
      async receiver(hang) {
        const receiver = await countingReceiver(hang);
        receivers.push(receiver);
        return receiver;
      },
      startWorker: (extra) => start('worker', extra),
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
class BareSender {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca: testCa().pki.caPem });
  private readonly url: URL;
  private readonly contentType: string;

  constructor(url: string, private readonly secret: string, private readonly eventsPerBody = 1) {
    this.url = new URL(url);
    this.contentType = CONTENT_TYPES[eventsPerBody === 1 ? 'single' : 'ndjson'];
  }

  /** One request; resolves to the ids of its events once the answer has been read. */
  async send(): Promise<string[]> {
    const created_at = new Date().toISOString();
    const events = Array.from({ length: this.eventsPerBody }, () => {
      const event: AuditEventData = { ...EVENT, id: randomUUID(), org_id: SAMPLE_EVENT.org_id, created_at };
      return { eventId: event.id, json: renderEnvelope(event) };
    });
    const body = this.eventsPerBody === 1 ? events[0]!.json : packBodies('ndjson', events, this.eventsPerBody).bodies[0]!.body;
    const headers = deliveryHeaders({ deliveryId: randomUUID(), timestampSeconds: Math.floor(Date.now() / 1000), body, secrets: [this.secret], contentType: this.contentType, userAgent: USER_AGENT, custom: {} });
    await new Promise<void>((resolve, reject) => {
      const req = request(this.url, { method: 'POST', agent: this.agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
    return events.map((e) => e.eventId);
  }

  close(): void {
    this.agent.destroy();
  }
}

// --- measurements ---------------------------------------------------------------------------------------------

/**
 * Distinct events per second arriving at `receiver` over `seconds`, after a warm-up, while `feed` keeps the
 * pipeline busy until told to stop. `feed` returns how many events it handed over, so the caller can wait for
 * the backlog to drain and the next measurement starts on an idle stack.
 */
async function arrivalsPerSecond(receiver: CountingReceiver, seconds: number, feed: (running: () => boolean) => Promise<number>): Promise<number> {
  let running = true;
  const fed = feed(() => running);
  try {
    await sleep(throughputWarmupMs(seconds));
    const before = receiver.arrivals.size;
    const started = performance.now();
    await sleep(seconds * 1000);
    return perSecond(receiver.arrivals.size - before, performance.now() - started);
  } finally {
    running = false;
    // A feed that failed (the API refused events) fails the figure instead of leaving a backlog to the next one.
    const total = await fed;
    await waitUntil(() => receiver.arrivals.size >= total, 60_000);
  }
}

/** Keeps up to `backlog` ingested events undelivered, `eventsPerRequest` per POST from `clients` clients. */
function ingestFeed(org: Org, receiver: CountingReceiver, eventsPerRequest: number, backlog: number, clients = 2) {
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

/**
 * Open loop: `fire` is called `rate` times a second on schedule, whether or not earlier calls have finished, and
 * resolves to the event ids it started and when. Resolves once every call has.
 */
async function openLoop(rate: number, seconds: number, fire: () => Promise<string[]>): Promise<{ id: string; sent: number }[]> {
  const total = Math.round(rate * seconds);
  const started = performance.now();
  const calls: Promise<{ id: string; sent: number }[]>[] = [];
  for (let i = 0; i < total; i += 1) {
    const wait = started + (i * 1000) / rate - performance.now();
    if (wait > 1) await sleep(wait);
    const sent = performance.now();
    calls.push(fire().then((ids) => ids.map((id) => ({ id, sent }))));
  }
  return (await Promise.all(calls)).flat();
}

/**
 * Latencies (ms, ascending) from each event's start to its first arrival at each receiver, over `seconds` of an
 * open loop after a warm-up. An event that never arrives counts as Infinity, so a loss shows in the percentiles.
 */
async function arrivalLatencies(receivers: CountingReceiver[], rate: number, seconds: number, fire: () => Promise<string[]>): Promise<number[]> {
  const settle = async (sent: { id: string }[]) => {
    await waitUntil(() => receivers.every((r) => sent.every((s) => r.arrivals.has(s.id))), 30_000);
  };
  await settle(await openLoop(rate, latencyWarmupMs(seconds) / 1000, fire));
  const sent = await openLoop(rate, seconds, fire);
  await settle(sent);
  return receivers.flatMap((r) => sent.map((s) => (r.arrivals.get(s.id) ?? Infinity) - s.sent)).sort((a, b) => a - b);
}

const ms = (value: number) => Number(value.toFixed(2));

// --- the figures ----------------------------------------------------------------------------------------------

/** Every delivery figure; one stack, torn down at the end whatever happens. */
export async function deliveryFigures(seconds: number): Promise<Figure[]> {
  return withRig(async (rig) => {
    // The per-origin cap (DELIVERY_ORIGIN_CONCURRENCY) at the full concurrency: the throughput figures have one
    // receiver, and the bare loop reaches it with CONCURRENCY requests in flight. Figure 4 restores the default.
    const fullOrigin = { DELIVERY_ORIGIN_CONCURRENCY: String(CONCURRENCY) };
    const worker = await rig.startWorker(fullOrigin);
    const receiver = await rig.receiver();
    const figures: Record<'throughput' | 'latency' | 'ndjson' | 'isolation' | 'workers', Figure[]> = { throughput: [], latency: [], ndjson: [], isolation: [], workers: [] };

    // 1, 2 and 5: `single`.
    const single = await rig.org();
    const singleSecret = await single.webhook(receiver.url('/single'));
    const bareSingle = new BareSender(receiver.url('/single'), singleSecret);
    try {
      const ingested = await arrivalLatencies([receiver], LATENCY_RATE, seconds, () => single.ingest(1));
      const bare = await arrivalLatencies([receiver], LATENCY_RATE, seconds, () => bareSingle.send());
      for (const p of [50, 99]) {
        figures.latency.push(figure(`ingest → receiver latency p${p} at ${LATENCY_RATE} events/s, one a POST, single (1 worker; lower is better)`, ms(percentile(ingested, p)), 'ms', `bare render + sign + HTTPS POST p${p} at ${LATENCY_RATE} req/s, start → arrival`, ms(percentile(bare, p))));
      }

      const oneWorker = await arrivalsPerSecond(receiver, seconds, ingestFeed(single, receiver, 100, 2000));
      const bareRate = await arrivalsPerSecond(receiver, seconds, bareFeed(bareSingle, receiver));
      figures.throughput.push(figure(`end-to-end deliveries/s, single (API + 1 worker, ${CONCURRENCY} in flight; 100 events a POST /audit-events)`, oneWorker, 'deliveries/s', `bare render + sign + keep-alive HTTPS POST loop, ${CONCURRENCY} in flight`, bareRate));

      const second = await rig.startWorker(fullOrigin);
      const twoWorkers = await arrivalsPerSecond(receiver, seconds, ingestFeed(single, receiver, 100, 4000));
      await rig.stop(second);
      figures.workers.push(figure('end-to-end deliveries/s with 2 worker processes, single', twoWorkers, 'deliveries/s', '1 worker process, same run', oneWorker));
    } finally {
      bareSingle.close();
    }

    // 3: `ndjson`, 100 events a body.
    const ndjson = await rig.org();
    const ndjsonSecret = await ndjson.webhook(receiver.url('/ndjson'), { format: 'ndjson', max_events: NDJSON_MAX_EVENTS });
    const bareNdjson = new BareSender(receiver.url('/ndjson'), ndjsonSecret, NDJSON_MAX_EVENTS);
    try {
      const value = await arrivalsPerSecond(receiver, seconds, ingestFeed(ndjson, receiver, 1000, 20_000, 4));
      const referenceValue = await arrivalsPerSecond(receiver, seconds, bareFeed(bareNdjson, receiver));
      figures.ndjson.push(figure(`end-to-end events/s, ndjson max_events ${NDJSON_MAX_EVENTS} (API + 1 worker; 1000 events a POST /audit-events)`, value, 'events/s', `bare render + sign + POST of ${NDJSON_MAX_EVENTS}-event ndjson bodies, ${CONCURRENCY} in flight`, referenceValue));
    } finally {
      bareNdjson.close();
    }

    // 4: isolation, with the default per-origin cap; the endpoint that never answers is added last.
    await rig.stop(worker);
    await rig.startWorker();
    const isolated = await rig.org();
    const healthy = [receiver, ...(await Promise.all(Array.from({ length: HEALTHY_ENDPOINTS - 1 }, () => rig.receiver())))];
    for (const r of healthy) await isolated.webhook(r.url('/isolated'));
    const without = await arrivalLatencies(healthy, ISOLATION_RATE, seconds, () => isolated.ingest(1));
    await isolated.webhook((await rig.receiver(true)).url('/never'));
    const withHang = await arrivalLatencies(healthy, ISOLATION_RATE, seconds, () => isolated.ingest(1));
    figures.isolation.push(figure(`${HEALTHY_ENDPOINTS} healthy endpoints p99 at ${ISOLATION_RATE} events/s while a 3rd times out (${TIMEOUT_MS} ms) on every attempt (lower is better)`, ms(percentile(withHang, 99)), 'ms', 'same endpoints p99 without it, same run', ms(percentile(without, 99))));
    return [...figures.throughput, ...figures.latency, ...figures.ndjson, ...figures.isolation, ...figures.workers];
  });
}
