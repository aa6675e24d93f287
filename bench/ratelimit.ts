// Rate limit checks, each next to its physical limit in the same run:
//  - in-library checks/s (memory store, 3 matching rules) against bare Map counter increments of the same 3 counters;
//  - the Redis Lua path's checks/s against redis-benchmark's EVALSHA of the same script on the same server;
//  - HTTP checks/s of POST /rate-limits/check at concurrency 32 against GET /healthz of the same process, and
//    p50/p99 at a fixed 2,000 requests/s against /healthz at the same rate; the load comes from bench/http-load.ts
//    in a process of its own, so the generator never shares an event loop with the server or the bench;
//  - Envoy's ShouldRateLimit over gRPC (CONTRACT 19) at concurrency 32 against a bare @grpc/grpc-js server answering
//    a constant message (bench/grpc-bare-server.ts) and next to the HTTP check of the same process, and its p99 at
//    500 checks/s with 1 and with 10 matching rules on the memory store, the Redis store and a 3-master Redis
//    Cluster, against the bare server's p99 at that rate; the calls come from bench/grpc-load.ts, one client for both.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { checkRequestSchema, ruleScopeSchema, type RateLimitRule } from '@gatehook/core/rate-limit-rule-schema';
import { issueApiKey } from '@gatehook/db/api-keys';
import { createDb, sqlPool } from '@gatehook/db/client';
import { RateLimiter } from '@gatehook/ratelimit/limiter';
import { RuleCache } from '@gatehook/ratelimit/rule-cache';
import { MemoryCounterStore } from '@gatehook/ratelimit/stores/memory';
import { counterKey } from '@gatehook/ratelimit/counter-key';
import { CHECK_AND_CONSUME_SHA, RedisCounterStore } from '@gatehook/ratelimit/stores/redis';
import { createTestDatabase } from '@gatehook/testkit/database';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';
import { startRedisCluster } from '@gatehook/testkit/redis-cluster';
import { SERVICE_NODE_FLAGS } from '@gatehook/core/service';
import { cpuMs } from './cost';
import { encodeRlsRequest } from './rls-wire';
import { callsUntil, opsPerSecond, type Figure } from './measure';

const ORG = randomUUID();
const HOUR = 3600;

function rule(name: string, fields: Partial<RateLimitRule>): RateLimitRule {
  return {
    id: randomUUID(),
    orgId: ORG,
    name,
    description: null,
    status: 'active',
    scope: ruleScopeSchema.parse({ type: 'mcp_tool_call' }),
    keyBy: ['org'],
    // Budgets far above what a run can use, so every check does the full consume path.
    limit: 2_000_000_000,
    windowSeconds: HOUR,
    burst: 2_000_000_000,
    action: 'deny',
    createdAt: new Date(),
    updatedAt: new Date(),
    ...fields,
  };
}

// A gateway's typical set: an org ceiling, a per-user budget and a per-tool budget on a glob.
const RULES = [
  rule('org ceiling', {}),
  rule('per user', { keyBy: ['org', 'user'] }),
  rule('github tools', {
    keyBy: ['org', 'tool'],
    scope: ruleScopeSchema.parse({ type: 'mcp_tool_call', tool_patterns: ['github.*'] }),
  }),
];
const USERS = Array.from({ length: 1000 }, () => randomUUID());
const CALLS = USERS.map((user_id) => checkRequestSchema.parse({ user_id, tool_key: 'github.create_issue' }));

async function asyncOpsPerSecond(fn: () => Promise<unknown>, seconds: number, inFlight = 1): Promise<number> {
  await callsUntil(fn, performance.now() + 300, inFlight);
  const started = performance.now();
  const ops = await callsUntil(fn, started + seconds * 1000, inFlight);
  return Math.round((ops / (performance.now() - started)) * 1000);
}

async function memoryFigure(seconds: number): Promise<Figure> {
  const limiter = new RateLimiter({
    rules: new RuleCache({ source: async () => RULES }),
    store: new MemoryCounterStore(),
  });
  await limiter.check(ORG, CALLS[0]!); // caches the rules
  let i = 0;
  // Rules cached and memory counters: the decision comes without a promise.
  const value = opsPerSecond(() => {
    const decision = limiter.decide(ORG, CALLS[i++ % CALLS.length]!);
    if (decision instanceof Promise || decision.rules.length !== 3)
      throw new Error('expected a synchronous decision over 3 rules');
  }, seconds);
  const counters = new Map<string, number>();
  let j = 0;
  const referenceValue = opsPerSecond(() => {
    const user = USERS[j++ % USERS.length]!;
    for (const key of [ORG, user, 'github.create_issue']) counters.set(key, (counters.get(key) ?? 0) + 1);
  }, seconds);
  await limiter.close();
  return {
    figure: 'rate limit checks in-library (memory store, 3 matching rules)',
    value,
    unit: 'checks/s',
    reference: 'bare Map increments of the same 3 counters',
    referenceValue,
    ratio: Number((value / referenceValue).toFixed(4)),
  };
}

async function redisFigure(seconds: number): Promise<Figure> {
  const prefix = `bench_${randomBytes(4).toString('hex')}`;
  const redis = new Redis(TEST_REDIS_URL);
  const store = new RedisCounterStore(redis, { prefix, timeoutMs: 5000 });
  const limits = RULES.map(() => ({ calls: 2_000_000_000, windowMs: HOUR * 1000, deny: true }));
  // Counters as the limiter names them for RULES: one per organisation, one per user, one per tool.
  const owners = RULES.map((r) => r.id);
  const counterKeys = ['', USERS[0]!, 'github.create_issue'];
  const batch = { orgId: ORG, owners, keys: counterKeys, limits, cost: 1 };
  await store.checkAndConsume(batch); // loads the script
  const value = await asyncOpsPerSecond(() => store.checkAndConsume(batch), seconds, 50);

  // The same script with the same keys and arguments, from redis-benchmark's 50 clients.
  const keys = owners.map((owner, i) => counterKey(prefix, ORG, owner, counterKeys[i]!));
  const args = ['1', ...limits.flatMap((l) => [String(l.calls), String(l.windowMs), '1'])];
  const url = new URL(TEST_REDIS_URL);
  const requests = String(Math.max(10_000, Math.round(value * seconds)));
  const csv = execFileSync(
    'redis-benchmark',
    [
      '-h',
      url.hostname,
      '-p',
      url.port || '6379',
      '-c',
      '50',
      '-n',
      requests,
      '--csv',
      'EVALSHA',
      CHECK_AND_CONSUME_SHA,
      String(keys.length),
      ...keys,
      ...args,
    ],
    { encoding: 'utf8' },
  );
  const referenceValue = Math.round(Number(csv.trim().split('\n').at(-1)!.split(',')[1]!.replaceAll('"', '')));
  const leftovers = await redis.keys(`${prefix}:*`);
  if (leftovers.length > 0) await redis.del(...leftovers);
  await redis.quit();
  return {
    figure: 'rate limit checks through the Redis Lua script (3 counters, 50 in flight)',
    value,
    unit: 'checks/s',
    reference: 'redis-benchmark EVALSHA of the same script, 50 clients',
    referenceValue,
    ratio: Number((value / referenceValue).toFixed(4)),
  };
}

const execFileAsync = promisify(execFile);

export interface LoadResult {
  requests: number;
  errors: number;
  perSecond: number;
  latenciesMs: { p50: number; p99: number; max: number };
}

/**
 * bench/http-load.ts in a process of its own (so this process may run other load meanwhile). A request answered
 * with another status than `expectStatus` fails the run, unless `tolerateErrors` (load whose answers are not the
 * figure, such as abuse that a service may refuse).
 */
export async function load(spec: Record<string, unknown>, { tolerateErrors = false } = {}): Promise<LoadResult> {
  const run = execFileAsync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'http-load.ts')], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  run.child.stdin!.end(JSON.stringify(spec));
  const { stdout } = await run;
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as LoadResult;
  if (result.errors > 0 && !tolerateErrors)
    throw new Error(`${result.errors} of ${result.requests} requests failed: ${JSON.stringify(spec.url)}`);
  return result;
}

const CONCURRENCY = 32;
const RATE = 2_000;

async function httpFigures(seconds: number, store: 'memory' | 'redis'): Promise<Figure[]> {
  const database = await createTestDatabase();
  const db = createDb(database.url, { poolSize: 2 });
  const api = await startServiceProcess('api', {
    DATABASE_URL: database.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: `bench_${randomBytes(4).toString('hex')}`,
    RATE_LIMIT_STORE: store,
    NODE_ENV: 'production',
    GATEHOOK_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
  });
  try {
    const { key } = await issueApiKey(sqlPool(db), { orgId: ORG, name: 'bench', role: 'admin', permissions: [] });
    const base = `http://127.0.0.1:${api.port}`;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    for (const r of RULES) {
      const body = {
        name: r.name,
        scope: r.scope,
        key_by: r.keyBy,
        limit: r.limit,
        window_seconds: r.windowSeconds,
        burst: r.burst,
      };
      const created = await fetch(`${base}/rate-limits/rules`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (created.status !== 201) throw new Error(`rule not created: ${created.status} ${await created.text()}`);
    }
    const check = {
      url: `${base}/rate-limits/check`,
      method: 'POST',
      headers,
      bodies: USERS.map((user_id) => JSON.stringify({ user_id, tool_key: 'github.create_issue' })),
    };
    const health = { url: `${base}/healthz`, method: 'GET', headers: {} };
    const warmupSeconds = 1; // JIT, connections, key and rule caches
    const checksClosed = await load({ ...check, mode: 'closed', concurrency: CONCURRENCY, seconds, warmupSeconds });
    const healthClosed = await load({ ...health, mode: 'closed', concurrency: CONCURRENCY, seconds, warmupSeconds });
    const checksOpen = await load({ ...check, mode: 'open', rate: RATE, seconds, warmupSeconds });
    const healthOpen = await load({ ...health, mode: 'open', rate: RATE, seconds, warmupSeconds });
    return [
      {
        figure: `POST /rate-limits/check at concurrency ${CONCURRENCY} (${store} store, 3 matching rules)`,
        value: checksClosed.perSecond,
        unit: 'checks/s',
        reference: `GET /healthz at concurrency ${CONCURRENCY}, same process`,
        referenceValue: healthClosed.perSecond,
        ratio: Number((checksClosed.perSecond / healthClosed.perSecond).toFixed(4)),
      },
      ...(['p50', 'p99'] as const).map((p) => ({
        figure: `POST /rate-limits/check ${p} at ${RATE.toLocaleString('en-US')} req/s (${store} store; lower is better)`,
        value: checksOpen.latenciesMs[p],
        unit: 'ms',
        reference: `GET /healthz ${p} at ${RATE.toLocaleString('en-US')} req/s, same process`,
        referenceValue: healthOpen.latenciesMs[p],
        ratio: Number((checksOpen.latenciesMs[p] / healthOpen.latenciesMs[p]).toFixed(4)),
      })),
    ];
  } finally {
    await api.kill('SIGTERM');
    await db.$disconnect();
    await database.drop();
  }
}

/** bench/grpc-load.ts in a process of its own; a failed call fails the run. */
async function grpcLoad(spec: Record<string, unknown>): Promise<LoadResult> {
  const run = execFileAsync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'grpc-load.ts')], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  run.child.stdin!.end(JSON.stringify(spec));
  const { stdout } = await run;
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as LoadResult;
  if (result.errors > 0)
    throw new Error(`${result.errors} of ${result.requests} gRPC calls failed: ${JSON.stringify(spec.target)}`);
  return result;
}

/** The bare reference server (bench/grpc-bare-server.ts), run with the service processes' node flags. */
async function startBareGrpcServer(): Promise<{ port: number; pid: number; stop(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    [...SERVICE_NODE_FLAGS, '--import', 'tsx', path.join(__dirname, 'grpc-bare-server.ts')],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = once(child, 'exit');
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  return {
    port: Number(line.toString().trim()),
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const GRPC_RATE = 500;

/** The gRPC figures (group `grpc` of bench/run.ts: `BENCH_ONLY=grpc pnpm bench`). */
export async function grpcRateLimitFigures(seconds: number): Promise<Figure[]> {
  const database = await createTestDatabase();
  const db = createDb(database.url, { poolSize: 2 });
  const cluster = await startRedisCluster({ masters: 3 });
  const bare = await startBareGrpcServer();
  const apis: ServiceProcess[] = [];
  try {
    const env = (store: 'memory' | 'redis', extra: Record<string, string> = {}) => ({
      DATABASE_URL: database.url,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `bench_${randomBytes(4).toString('hex')}`,
      RATE_LIMIT_STORE: store,
      NODE_ENV: 'production',
      GATEHOOK_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
      ...extra,
    });
    const memory = await startServiceProcess('api', env('memory'));
    apis.push(memory);
    const redis = await startServiceProcess('api', env('redis'));
    apis.push(redis);
    const onCluster = await startServiceProcess('api', env('redis', { REDIS_CLUSTER_NODES: cluster.seeds.join(',') }));
    apis.push(onCluster);

    // Three organisations, each with its own rules (in the one database every process reads): the gateway's
    // typical 3 (as the HTTP figures), 1, and 10, every one matching every call.
    const orgs = { three: ORG, one: randomUUID(), ten: randomUUID() };
    const keys: Record<keyof typeof orgs, string> = { three: '', one: '', ten: '' };
    const rulesOf = {
      three: RULES,
      one: [rule('org ceiling', {})],
      ten: Array.from({ length: 10 }, (_, i) => rule(`per user ${i + 1}`, { keyBy: ['org', 'user'] })),
    };
    for (const name of Object.keys(orgs) as (keyof typeof orgs)[]) {
      keys[name] = (
        await issueApiKey(sqlPool(db), { orgId: orgs[name], name: 'bench', role: 'admin', permissions: [] })
      ).key;
      for (const r of rulesOf[name]) {
        const body = {
          name: r.name,
          scope: r.scope,
          key_by: r.keyBy,
          limit: r.limit,
          window_seconds: r.windowSeconds,
          burst: r.burst,
        };
        const created = await fetch(`http://127.0.0.1:${memory.port}/rate-limits/rules`, {
          method: 'POST',
          headers: { authorization: `Bearer ${keys[name]}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        if (created.status !== 201) throw new Error(`rule not created: ${created.status} ${await created.text()}`);
      }
    }
    const requests = USERS.map((user_id) =>
      encodeRlsRequest('mcp_tool_call', [
        [
          ['tool_key', 'github.create_issue'],
          ['user_id', user_id],
        ],
      ]).toString('base64'),
    );
    const grpc = (api: { grpcPort: number } | { port: number }, org: keyof typeof orgs) => ({
      target: `127.0.0.1:${'grpcPort' in api ? api.grpcPort : api.port}`,
      authorization: `Bearer ${keys[org]}`,
      requests,
    });
    const warmupSeconds = 1;
    const closed = { mode: 'closed', concurrency: CONCURRENCY, seconds, warmupSeconds };

    // Throughput at concurrency 32, and what each call cost the server's process in CPU (user + system, from /proc;
    // the warm-up runs before the window): the second comparison holds on a machine busy with other work too.
    const measured = async (target: Parameters<typeof grpc>[0], pid: number) => {
      await grpcLoad({ ...grpc(target, 'three'), ...closed, seconds: warmupSeconds, warmupSeconds: 0 });
      const before = cpuMs(pid);
      const result = await grpcLoad({ ...grpc(target, 'three'), ...closed, warmupSeconds: 0 });
      return { result, cpuUsPerCall: Math.round(((cpuMs(pid) - before) * 1000) / result.requests) };
    };
    const checks = await measured(memory, memory.pid);
    const bareMeasured = await measured(bare, bare.pid);
    const [checksClosed, bareClosed] = [checks.result, bareMeasured.result];
    const httpHeaders = { authorization: `Bearer ${keys.three}`, 'content-type': 'application/json' };
    const httpClosed = await load({
      url: `http://127.0.0.1:${memory.port}/rate-limits/check`,
      method: 'POST',
      headers: httpHeaders,
      bodies: USERS.map((user_id) => JSON.stringify({ user_id, tool_key: 'github.create_issue' })),
      ...closed,
    });
    const bareOpen = await grpcLoad({ ...grpc(bare, 'one'), mode: 'open', rate: GRPC_RATE, seconds, warmupSeconds });

    const figures: Figure[] = [
      {
        figure: `ShouldRateLimit over gRPC at concurrency ${CONCURRENCY} (memory store, 3 matching rules)`,
        value: checksClosed.perSecond,
        unit: 'checks/s',
        reference: `bare @grpc/grpc-js server answering a constant message, same client`,
        referenceValue: bareClosed.perSecond,
        ratio: Number((checksClosed.perSecond / bareClosed.perSecond).toFixed(4)),
        note: 'bar: ratio ≥ 0.6',
      },
      {
        figure: `ShouldRateLimit CPU of the server process per call at concurrency ${CONCURRENCY} (memory store, 3 matching rules; lower is better)`,
        value: checks.cpuUsPerCall,
        unit: 'µs',
        reference: 'bare @grpc/grpc-js server CPU per call',
        referenceValue: bareMeasured.cpuUsPerCall,
        ratio: Number((checks.cpuUsPerCall / bareMeasured.cpuUsPerCall).toFixed(4)),
      },
      ...(['p50', 'p99'] as const).map((p) => ({
        figure: `ShouldRateLimit ${p} at concurrency ${CONCURRENCY} (memory store, 3 matching rules; lower is better)`,
        value: checksClosed.latenciesMs[p],
        unit: 'ms',
        reference: `bare @grpc/grpc-js server ${p} at concurrency ${CONCURRENCY}`,
        referenceValue: bareClosed.latenciesMs[p],
        ratio: Number((checksClosed.latenciesMs[p] / bareClosed.latenciesMs[p]).toFixed(4)),
      })),
      {
        figure: `POST /rate-limits/check at concurrency ${CONCURRENCY} (memory store, 3 matching rules)`,
        value: httpClosed.perSecond,
        unit: 'checks/s',
        reference: `ShouldRateLimit at concurrency ${CONCURRENCY}, same process`,
        referenceValue: checksClosed.perSecond,
        ratio: Number((httpClosed.perSecond / checksClosed.perSecond).toFixed(4)),
      },
    ];
    const stores: [string, ServiceProcess][] = [
      ['memory store', memory],
      ['Redis store', redis],
      ['3-master Redis Cluster', onCluster],
    ];
    for (const [where, api] of stores) {
      for (const [org, count, bar] of [
        ['one', 1, 5],
        ['ten', 10, 7.5],
      ] as const) {
        const result = await grpcLoad({ ...grpc(api, org), mode: 'open', rate: GRPC_RATE, seconds, warmupSeconds });
        figures.push({
          figure: `ShouldRateLimit p99 at ${GRPC_RATE} checks/s (${where}, ${count} matching rule${count === 1 ? '' : 's'}; lower is better)`,
          value: result.latenciesMs.p99,
          unit: 'ms',
          reference: `bare @grpc/grpc-js server p99 at ${GRPC_RATE}/s`,
          referenceValue: bareOpen.latenciesMs.p99,
          ratio: Number((result.latenciesMs.p99 / bareOpen.latenciesMs.p99).toFixed(4)),
          note: `bar: ≤ ${bar} ms`,
        });
      }
    }
    return figures;
  } finally {
    await Promise.all(apis.map((api) => api.kill('SIGTERM')));
    await bare.stop();
    await cluster.close();
    await db.$disconnect();
    await database.drop();
  }
}

/** Every rate limit figure. */
export async function rateLimitFigures(seconds: number): Promise<Figure[]> {
  return [
    await memoryFigure(seconds),
    await redisFigure(seconds),
    ...(await httpFigures(seconds, 'redis')),
    ...(await httpFigures(seconds, 'memory')),
  ];
}
