// The gRPC check path warmed before the process takes calls. A fresh process runs every function of a call (Node's
// HTTP/2 server, grpc-js, the protobuf codec, the schema, the limiter, the response) in V8's interpreter until each
// has run often enough to be optimised: its first few thousand calls cost two to three times the CPU of later ones,
// and at a gateway's steady rate that is seconds of worse tail latency after every deploy. These calls run that
// path end to end, over loopback HTTP/2, against a server of their own whose organisations, keys and rules exist only
// here. Its counters live in the process's own counter store (so that a Redis store's client, script and, on a
// cluster, every master's connection are warm too) under those private organisations, with one-second windows: they
// expire by themselves, and no organisation's counters, rules, metrics, spans or events are touched.

import { randomUUID } from 'node:crypto';
import { Counter } from 'prom-client';
import { credentials, makeGenericClientConstructor, Metadata, type MethodDefinition } from '@grpc/grpc-js';
import { generateApiKey, type Principal } from '@gatehook/core/api-keys';
import type { Logger } from '@gatehook/core/logger';
import { ruleScopeSchema, type RateLimitRule } from '@gatehook/core/rate-limit-rule-schema';
import { RateLimiter } from '@gatehook/ratelimit/limiter';
import { RuleCache } from '@gatehook/ratelimit/rule-cache';
import { MemoryCounterStore } from '@gatehook/ratelimit/stores/memory';
import type { CounterStore } from '@gatehook/ratelimit/stores/store';
import { rateLimitCheck } from '../services/rate-limit-check';
import { RLS_DOMAIN, RLS_METHOD } from './rate-limit-service';
import { rateLimitServiceDefinition, startGrpcServer } from './server';

/** What the warm-up may cost the process's start: calls made, calls in flight at once, and a time bound. */
export const GRPC_WARM_UP = {
  /** Enough for V8 to optimise the path's functions (they tier up after some thousands of runs). */
  calls: 5_000,
  inFlight: 16,
  /** A slow machine stops warming at this point and starts anyway. */
  maxMs: 5_000,
} as const;

export interface GrpcWarmUpOptions {
  calls?: number;
  inFlight?: number;
  maxMs?: number;
  /** The process's counter store (default: a memory store of the warm-up's own). It is not closed here. */
  store?: CounterStore;
  logger: Logger;
}

/** What a warm-up did: calls answered (OK or OVER_LIMIT), calls failed, and how long it took. */
export interface GrpcWarmUp {
  calls: number;
  failed: number;
  ms: number;
}

/** Private organisations the calls are spread over (on a Redis Cluster, the slots of their counters). */
const WARM_ORGANISATIONS = 16;

function warmRule(orgId: string, name: string, fields: Partial<RateLimitRule>): RateLimitRule {
  const now = new Date();
  return {
    id: randomUUID(),
    orgId,
    name,
    description: null,
    status: 'active',
    scope: ruleScopeSchema.parse({ type: RLS_DOMAIN }),
    keyBy: ['org'],
    limit: 1_000_000_000,
    // The counters of a private organisation, gone a second after the warm-up's last call.
    windowSeconds: 1,
    burst: 1_000_000_000,
    action: 'deny',
    createdAt: now,
    updatedAt: now,
    ...fields,
  };
}

/** A private organisation's rules: three that allow every call, one that denies its second call a second. */
function warmRules(orgId: string): RateLimitRule[] {
  return [
    warmRule(orgId, 'ceiling', {}),
    warmRule(orgId, 'per user', { keyBy: ['org', 'user'] }),
    warmRule(orgId, 'per tool', {
      keyBy: ['org', 'tool'],
      scope: ruleScopeSchema.parse({ type: RLS_DOMAIN, tool_patterns: ['warm.*'] }),
    }),
    warmRule(orgId, 'denying', {
      limit: 1,
      burst: 1,
      scope: ruleScopeSchema.parse({ type: RLS_DOMAIN, tool_patterns: ['warm.denied'] }),
    }),
  ];
}

/**
 * Runs {@link GRPC_WARM_UP} ShouldRateLimit calls through the real server and check code, against private
 * organisations (random ids), each with its key and rule set, in `store` (the process's counter store), on a loopback port that
 * closes afterwards. Calls are allowed, denied and refused (INVALID_ARGUMENT), as a gateway's are.
 */
export async function warmUpGrpc(options: GrpcWarmUpOptions): Promise<GrpcWarmUp> {
  const calls = options.calls ?? GRPC_WARM_UP.calls;
  const inFlight = options.inFlight ?? GRPC_WARM_UP.inFlight;
  const maxMs = options.maxMs ?? GRPC_WARM_UP.maxMs;
  const started = performance.now();

  // Several private organisations: each one's counters carry its hash tag, so on a Redis Cluster their keys fall on
  // different slots and every master's connection is used.
  const organisations = Array.from({ length: WARM_ORGANISATIONS }, () => {
    const orgId = randomUUID();
    const principal: Principal = {
      keyId: randomUUID(),
      keyName: 'warm-up',
      orgId,
      role: 'member',
      permissions: ['check_rate_limits'],
    };
    const metadata = new Metadata();
    const key = generateApiKey();
    metadata.set('authorization', `Bearer ${key}`);
    return { orgId, key, principal, metadata, rules: warmRules(orgId) };
  });
  const byKey = new Map(organisations.map((o) => [o.key, o.principal]));
  const rulesOf = new Map<string, RateLimitRule[]>(organisations.map((o) => [o.orgId, o.rules]));
  const store = options.store ?? new MemoryCounterStore();
  const limiter = new RateLimiter({
    rules: new RuleCache({ source: async (orgId) => rulesOf.get(orgId) ?? [] }),
    store,
  });
  const decisions = new Counter({
    name: 'gatehook_rate_limit_warm_up_decisions_total',
    help: 'not registered: the warm-up counts in no registry',
    labelNames: ['outcome', 'source', 'interface'],
    registers: [],
  });
  const server = await startGrpcServer({
    port: 0,
    host: '127.0.0.1',
    keys: { principalOf: (token) => byKey.get(token) ?? null },
    check: rateLimitCheck(limiter, decisions),
    logger: options.logger,
    traced: false,
  });

  // The client sends bytes encoded beforehand, so that its own work stays small next to the server's.
  const method = rateLimitServiceDefinition()[RLS_METHOD]! as MethodDefinition<object, unknown>;
  // A request of descriptors, each given as its entries (key, value pairs) and an optional hits_addend.
  const encode = (...descriptors: { entries: [string, string][]; hits?: number }[]) =>
    method.requestSerialize({
      domain: RLS_DOMAIN,
      descriptors: descriptors.map(({ entries, hits }) => ({
        entries: entries.map(([key, value]) => ({ key, value })),
        ...(hits === undefined ? {} : { hits_addend: { value: hits } }),
      })),
    });
  const users = Array.from({ length: 64 }, () => randomUUID());
  const requests: Buffer[] = users.flatMap((user, i) => [
    encode({
      entries: [
        ['tool_key', 'warm.read'],
        ['user_id', user],
      ],
    }),
    encode(
      {
        entries: [
          ['tool_key', 'other.write'],
          ['user_id', user],
          ['group', `g${i % 4}`],
        ],
      },
      { entries: [['tool_key', 'warm.denied']], hits: 1 },
    ),
    // Refused: an entry the check does not know (INVALID_ARGUMENT).
    encode({
      entries: [
        ['tool_key', 'warm.read'],
        ['unknown', 'x'],
      ],
    }),
  ]);
  const Client = makeGenericClientConstructor(
    {
      [RLS_METHOD]: {
        ...method,
        requestSerialize: (bytes: Buffer) => bytes,
        responseDeserialize: (bytes: Buffer) => bytes,
      } as MethodDefinition<Buffer, Buffer>,
    },
    'RateLimitService',
  );
  const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure()) as unknown as {
    [RLS_METHOD](request: Buffer, metadata: Metadata, callback: (error: { code?: number } | null) => void): void;
    close(): void;
  };
  let sent = 0;
  let failed = 0;
  const deadline = started + maxMs;
  const send = (request: Buffer, metadata: Metadata) =>
    new Promise<void>((resolve) =>
      client[RLS_METHOD](request, metadata, (error) => {
        // INVALID_ARGUMENT (3) is what the refused requests are for; anything else failed.
        if (error !== null && error.code !== 3) failed += 1;
        resolve();
      }),
    );
  try {
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (sent < calls && performance.now() < deadline) {
          const n = sent++;
          await send(requests[n % requests.length]!, organisations[n % organisations.length]!.metadata);
        }
      }),
    );
  } finally {
    client.close();
    await server.close();
    await limiter.close();
    if (store !== options.store) await store.close();
  }
  return { calls: sent, failed, ms: Math.round(performance.now() - started) };
}
