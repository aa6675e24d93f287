// Scale figures: end-to-end deliveries/s with 1, 2 and 4 worker PROCESSES, on one Redis and on a
// 3-master Redis Cluster (no replicas) started here, in the same run. Each topology is a stack of its own (fresh
// database, one API process, real worker processes started as `pnpm start:worker` starts them) at the service's
// defaults: the only settings are those a test deployment must set (addresses, REDIS_CLUSTER_NODES for the
// cluster, the test CA, 127.0.0.1 allowed, a key; DELIVERY_QUEUE_SHARDS stays 8). Both stacks stay up for the
// whole group and the two are measured in turn at each process count, so a change of the machine's speed during
// the run shows in both.
//
// The load: ORGS organisations with WEBHOOKS_PER_ORG `single` webhooks each, spread over RECEIVERS HTTPS
// receiver origins on 127.0.0.1 (one path per webhook) that count distinct (webhook, event) pairs. A measurement
// is a fixed burst, EVENTS_PER_ORG events per organisation posted 100 a request through POST /audit-events, each
// fanned out to every webhook of its organisation; deliveries/s runs from the first request's start to the last
// delivery's arrival. A smaller burst of the same shape first warms the processes just started.
//
// The reference of the 1-process figure on one Redis is the bare render + sign + keep-alive HTTPS POST loop of
// bench/delivery.ts to the same receivers; every other figure is measured against the 1-process figure of its
// topology (how it scales) or against one Redis at the same process count (what the cluster costs). The machine
// has few cores: the note of each figure says how much worker CPU a delivery took, so a ratio below the process
// count can be read as CPU-bound (or not).
import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceProcess } from '@gatehook/testkit/processes';
import { startReceiver } from '@gatehook/testkit/receiver';
import { sqlPool } from '@gatehook/db/client';
import { cpuMs, meter } from './cost';
import { BareSender, CONCURRENCY, figure, withRig, type Org, type Rig, type RigRedis } from './delivery';
import type { Figure } from './measure';

const ORGS = 4;
const WEBHOOKS_PER_ORG = 8;
const RECEIVERS = 4;
/** Events per organisation of a measured burst: ORGS × EVENTS_PER_ORG × WEBHOOKS_PER_ORG deliveries. */
const EVENTS_PER_ORG = Number(process.env.BENCH_SCALE_EVENTS ?? 1000);
const WARMUP_EVENTS_PER_ORG = Math.max(100, Math.round(EVENTS_PER_ORG / 5));
const PROCESS_COUNTS = [1, 2, 4];
/** Clients posting a burst, 100 events a request. */
const CLIENTS = 4;
/** The longest a burst may take to arrive before its figure says what is missing. */
const SETTLE_MS = 180_000;

/** Receivers that count distinct (path, event id) pairs, with the time of the latest new one. */
interface PairCounter {
  /** Pairs that arrived again (a redelivery), since the start. */
  repeats(): number;
  /** The URL of `path` on receiver `r`. */
  url(r: number, path: string): string;
  count(): number;
  lastAt(): number;
  /** performance.now() of the n-th new pair since the start (0-based). */
  arrivedAt(n: number): number;
  close(): Promise<void>;
}

const EVENT_ID = /"data":\{"id":"([0-9a-f-]{36})"/g;

async function pairCounter(): Promise<PairCounter> {
  const seen = new Set<string>();
  let lastAt = 0;
  let repeats = 0;
  const times: number[] = [];
  const receivers = await Promise.all(
    Array.from({ length: RECEIVERS }, async (_, r) => {
      const receiver = await startReceiver((request) => {
        receiver.requests.length = 0;
        const at = performance.now();
        for (const [, id] of request.body.matchAll(EVENT_ID)) {
          const key = `${r}${request.path} ${id}`;
          if (seen.has(key)) repeats += 1;
          else {
            seen.add(key);
            times.push(at);
            lastAt = at;
          }
        }
        return { status: 200 };
      });
      return receiver;
    }),
  );
  return {
    url: (r, path) => receivers[r]!.url(path),
    repeats: () => repeats,
    count: () => seen.size,
    lastAt: () => lastAt,
    arrivedAt: (n) => times[n] ?? Infinity,
    close: async () => {
      await Promise.all(receivers.map((r) => r.close()));
    },
  };
}

interface Stack {
  kind: RigRedis;
  rig: Rig;
  orgs: Org[];
  counter: PairCounter;
  workers: ServiceProcess[];
}

/** The organisations and webhooks of one stack: webhook w of every organisation goes to receiver w % RECEIVERS. */
async function prepare(kind: RigRedis, rig: Rig): Promise<Stack> {
  const counter = await pairCounter();
  const orgs: Org[] = [];
  for (let o = 0; o < ORGS; o += 1) {
    const org = await rig.org();
    for (let w = 0; w < WEBHOOKS_PER_ORG; w += 1) await org.webhook(counter.url(w % RECEIVERS, `/o${o}-w${w}`));
    orgs.push(org);
  }
  return { kind, rig, orgs, counter, workers: [] };
}

/** Counters of the workers' /metrics that tell a stall from a slow pace, summed over the workers. */
const STALL_COUNTERS = {
  reenqueued: 'gatehook_reconciler_reenqueued_total',
  restarts: 'gatehook_queue_worker_restarts_total',
  redisErrors: 'gatehook_worker_redis_errors_total',
} as const;
type Stalls = Record<keyof typeof STALL_COUNTERS, number>;

async function stallCounters(workers: readonly ServiceProcess[]): Promise<Stalls> {
  const total: Stalls = { reenqueued: 0, restarts: 0, redisErrors: 0 };
  for (const worker of workers) {
    const text = await (await fetch(`http://127.0.0.1:${worker.port}/metrics`)).text();
    for (const line of text.split('\n')) {
      for (const [key, name] of Object.entries(STALL_COUNTERS) as [keyof Stalls, string][]) {
        if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
          total[key] += Number(line.slice(line.lastIndexOf(' ') + 1));
      }
    }
  }
  return total;
}

interface Burst {
  /** What the workers' stall counters gained over the burst. */
  stalls: Stalls;
  deliveriesPerSecond: number;
  /** Deliveries of the burst that arrived more than once (counted once in the rate). */
  repeats: number;
  /** ms from the first request until 99 % of the burst's deliveries had arrived: the rate without the tail. */
  ms99: number;
  expected: number;
  arrived: number;
  ms: number;
  workerCpuMs: number;
  postgresCpuMs: number;
  /** CPU ms of the stack's Redis servers (all masters) per delivery. */
  redisCpuMs: number;
}

/** Posts `eventsPerOrg` events to every organisation (100 a request, CLIENTS clients) and waits for every delivery. */
async function burst(stack: Stack, eventsPerOrg: number): Promise<Burst> {
  const expected = ORGS * eventsPerOrg * WEBHOOKS_PER_ORG;
  const base = stack.counter.count();
  const repeatsBefore = stack.counter.repeats();
  const requests = stack.orgs.flatMap((org) =>
    Array.from(
      { length: Math.ceil(eventsPerOrg / 100) },
      (_, i) => () => org.ingest(Math.min(100, eventsPerOrg - i * 100)),
    ),
  );
  const window = await meter(stack.rig.apiProcess, stack.workers, stack.rig.db);
  const stallsBefore = await stallCounters(stack.workers);
  const redisCpu = () => stack.rig.redisPids.reduce((sum, pid) => sum + cpuMs(pid), 0);
  const redisBefore = redisCpu();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < requests.length) await requests[next++]!();
    }),
  );
  const deadline = started + SETTLE_MS;
  while (stack.counter.count() - base < expected && performance.now() < deadline) await sleep(20);
  const arrived = stack.counter.count() - base;
  const ms = stack.counter.lastAt() - started;
  const ms99 = stack.counter.arrivedAt(base + Math.ceil(expected * 0.99) - 1) - started;
  const cost = await window.end(arrived);
  const redisCpuMs = Number(((redisCpu() - redisBefore) / Math.max(1, arrived)).toFixed(3));
  const stallsAfter = await stallCounters(stack.workers);
  const stalls = {
    reenqueued: stallsAfter.reenqueued - stallsBefore.reenqueued,
    restarts: stallsAfter.restarts - stallsBefore.restarts,
    redisErrors: stallsAfter.redisErrors - stallsBefore.redisErrors,
  };
  return {
    deliveriesPerSecond: Math.round((arrived / ms) * 1000),
    repeats: stack.counter.repeats() - repeatsBefore,
    ms99,
    stalls,
    expected,
    arrived,
    ms,
    workerCpuMs: cost.workerCpuMs,
    postgresCpuMs: cost.postgresCpuMs,
    redisCpuMs,
  };
}

/** Starts worker processes until the stack has `count`, then warms the new ones up with a burst. */
async function scaleTo(stack: Stack, count: number): Promise<void> {
  while (stack.workers.length < count) stack.workers.push(await stack.rig.startWorker());
  await burst(stack, WARMUP_EVENTS_PER_ORG);
}

/** The bare loop's deliveries/s: as many signed POSTs as a measured burst makes, CONCURRENCY in flight. */
async function bareRate(stack: Stack): Promise<number> {
  // A webhook's secret to sign with; the webhook itself is deleted at once (the service sends it nothing).
  const url = stack.counter.url(0, '/bare');
  const { id, secret } = await stack.orgs[0]!.webhook(url);
  await stack.orgs[0]!.remove(id);
  const sender = new BareSender(url, secret);
  try {
    const total = ORGS * EVENTS_PER_ORG * WEBHOOKS_PER_ORG;
    let left = total;
    const loop = async () => {
      while (left > 0) {
        left -= 1;
        await sender.send();
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, loop));
    left = total;
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, loop));
    return Math.round((total / (performance.now() - started)) * 1000);
  } finally {
    sender.close();
  }
}

const TOPOLOGY: Record<RigRedis, string> = { single: 'one Redis', cluster: '3-master Redis Cluster' };

function note(b: Burst, processes: number, stack: RigRedis): string {
  const missing =
    b.arrived < b.expected
      ? `; ${(b.expected - b.arrived).toLocaleString('en-US')} of ${b.expected.toLocaleString('en-US')} had not arrived within ${SETTLE_MS / 1000} s`
      : '';
  const repeated = b.repeats > 0 ? `; ${b.repeats.toLocaleString('en-US')} arrived twice` : '';
  const stalls = [
    b.stalls.reenqueued > 0 ? `the reconciler re-enqueued ${b.stalls.reenqueued}` : '',
    b.stalls.restarts > 0 ? `the queue watchdog recreated ${b.stalls.restarts} queue workers` : '',
    b.stalls.redisErrors > 0 ? `${b.stalls.redisErrors} Redis errors in periodic work` : '',
  ].filter((x) => x !== '');
  const first99 = `99 % in ${(b.ms99 / 1000).toFixed(1)} s (${Math.round((b.expected * 0.99 * 1000) / b.ms99).toLocaleString('en-US')} deliveries/s)`;
  return `${b.arrived.toLocaleString('en-US')} deliveries in ${(b.ms / 1000).toFixed(1)} s, ${first99}; worker CPU ${b.workerCpuMs} ms a delivery (${processes === 1 ? 'the process' : `all ${processes} processes`}), Redis CPU ${b.redisCpuMs} ms (${stack === 'cluster' ? 'all 3 masters' : 'the server'})${missing}${repeated}${stalls.length > 0 ? `; ${stalls.join(', ')}` : ''}`;
}

/** The partitioned history tables, and what one of their rows is. */
const HISTORY = { deliveries: 'delivery', delivery_attempts: 'attempt', audit_events: 'audit event' } as const;

/**
 * Bytes on disk per row of each history table (every partition, with its indexes and TOAST) on the one-Redis stack
 * after its bursts, as written (the earlier versions of updated rows included, not yet vacuumed), against the same
 * after VACUUM FULL: what the capacity plan's Postgres size rests on.
 */
async function historySizes(rig: Rig): Promise<Figure[]> {
  const pool = sqlPool(rig.db);
  const measure = async (table: string) => {
    const { rows } = await pool.query<{ n: string; bytes: string }>(
      `SELECT (SELECT count(*) FROM ${table}) AS n,
              (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('${table}') WHERE isleaf) AS bytes`,
    );
    return { n: Number(rows[0]!.n), bytes: Number(rows[0]!.bytes) };
  };
  const written = new Map<string, { n: number; bytes: number }>();
  for (const table of Object.keys(HISTORY)) written.set(table, await measure(table));
  await pool.query(`VACUUM FULL ${Object.keys(HISTORY).join(', ')}`);
  const figures: Figure[] = [];
  for (const [table, row] of Object.entries(HISTORY)) {
    const before = written.get(table)!;
    const after = await measure(table);
    const value = Math.round(before.bytes / Math.max(1, before.n));
    const referenceValue = Math.round(after.bytes / Math.max(1, after.n));
    figures.push({
      figure: `scale: bytes on disk per ${row} as written (${table}, all partitions with indexes and TOAST; one-Redis stack after its bursts)`,
      value,
      unit: 'bytes',
      reference: 'the same after VACUUM FULL',
      referenceValue,
      ratio: Number((value / referenceValue).toFixed(4)),
      note: `${before.n.toLocaleString('en-US')} rows, ${(before.bytes / 2 ** 20).toFixed(1)} MiB as written, ${(after.bytes / 2 ** 20).toFixed(1)} MiB after`,
    });
  }
  return figures;
}

export async function scaleFigures(): Promise<Figure[]> {
  return withRig((single) =>
    withRig(async (cluster) => {
      const stacks: Stack[] = [];
      try {
        stacks.push(await prepare('single', single), await prepare('cluster', cluster));
        return await measure(stacks);
      } finally {
        await Promise.allSettled(stacks.map((s) => s.counter.close()));
      }
    }, 'cluster'),
  );
}

async function measure(stacks: Stack[]): Promise<Figure[]> {
  const results = new Map<string, Burst>();
  const shape = `${ORGS} organisations × ${WEBHOOKS_PER_ORG} webhooks, a burst of ${(ORGS * EVENTS_PER_ORG).toLocaleString('en-US')} events posted 100 a request, first request → last arrival`;
  for (const processes of PROCESS_COUNTS) {
    for (const stack of stacks) {
      await scaleTo(stack, processes);
      results.set(`${stack.kind}:${processes}`, await burst(stack, EVENTS_PER_ORG));
    }
  }
  const bare = await bareRate(stacks[0]!);
  const figures: Figure[] = [];
  for (const stack of stacks) {
    const one = results.get(`${stack.kind}:1`)!;
    for (const processes of PROCESS_COUNTS) {
      const b = results.get(`${stack.kind}:${processes}`)!;
      const name = `scale: end-to-end deliveries/s, ${processes} worker process${processes === 1 ? '' : 'es'}, ${TOPOLOGY[stack.kind]} (${shape})`;
      const reference =
        stack.kind === 'cluster'
          ? ([
              `${processes} worker process${processes === 1 ? '' : 'es'}, one Redis, same run`,
              results.get(`single:${processes}`)!.deliveriesPerSecond,
            ] as const)
          : processes === 1
            ? ([`bare render + sign + keep-alive HTTPS POST loop, ${CONCURRENCY} in flight`, bare] as const)
            : (['1 worker process, one Redis, same run', one.deliveriesPerSecond] as const);
      figures.push({
        ...figure(name, b.deliveriesPerSecond, 'deliveries/s', reference[0], reference[1]),
        note: note(b, processes, stack.kind),
      });
    }
    for (const processes of PROCESS_COUNTS.filter((n) => n > 1)) {
      const b = results.get(`${stack.kind}:${processes}`)!;
      figures.push(
        figure(
          `scale: deliveries/s per worker process, ${processes} processes, ${TOPOLOGY[stack.kind]}`,
          Math.round(b.deliveriesPerSecond / processes),
          'deliveries/s',
          `1 worker process, ${TOPOLOGY[stack.kind]}, same run`,
          one.deliveriesPerSecond,
        ),
      );
    }
  }
  return [...figures, ...(await historySizes(stacks[0]!.rig))];
}
