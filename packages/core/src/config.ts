import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { MIN_METRICS_TOKEN_LENGTH } from './metrics-auth';
import { parseSeed } from './redis';

/**
 * Fixed key used only when NODE_ENV is explicitly `development` or `test`, so that `pnpm start` (which sets
 * `development` when NODE_ENV is unset and the database is on this machine, {@link developerCommandEnv}) works on a
 * fresh machine; never for real data.
 */
export const DEVELOPMENT_ENCRYPTION_KEY = 'Z2F0ZWhvb2stZGV2ZWxvcG1lbnQta2V5LW5vdC1zZWM=';

const integer = (min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max);

const retrySchedule = z
  .string()
  .transform((value, ctx) => {
    const parts = value.split(',').map((p) => p.trim());
    const seconds = parts.map(Number);
    if (parts.length !== 8 || seconds.some((s) => !Number.isFinite(s) || s < 0)) {
      ctx.addIssue({ code: 'custom', message: 'must be 8 comma-separated non-negative numbers of seconds' });
      return z.NEVER;
    }
    return seconds;
  });

/** REDIS_CLUSTER_NODES: comma-separated seed URLs, each `redis://host:port` or `rediss://user:pass@host:port`. */
const clusterNodes = z.string().transform((value, ctx) => {
  const urls = value.split(',').map((u) => u.trim()).filter((u) => u !== '');
  for (const url of urls) {
    try {
      parseSeed(url);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  }
  return urls;
});
function isProxyUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && (url.pathname === '/' || url.pathname === '') && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/** OTLP over HTTP only: `grpc` would need a second transport for the same spans. */
const otlpProtocol = z.enum(['http/protobuf', 'http/json'], { message: 'must be http/protobuf or http/json (grpc is not supported)' });

/** OTEL_EXPORTER_OTLP_HEADERS: `key=value` pairs separated by commas, values URL-encoded (the OpenTelemetry format). */
const otlpHeaders = z.string().transform((value, ctx) => {
  const headers: Record<string, string> = {};
  for (const pair of value.split(',')) {
    if (pair.trim() === '') continue;
    const at = pair.indexOf('=');
    const name = at > 0 ? pair.slice(0, at).trim() : '';
    let decoded: string | null = null;
    try {
      decoded = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      decoded = null;
    }
    // The message never quotes the value: it is often a backend's API key.
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || decoded === null) {
      ctx.addIssue({ code: 'custom', message: 'must be comma-separated key=value pairs with URL-encoded values' });
      return z.NEVER;
    }
    headers[name] = decoded;
  }
  return headers;
});

/** The database a process uses when DATABASE_URL is unset. */
export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/gatehook';

/**
 * Whether a Postgres connection string names a database on this machine: a loopback host (`localhost`, 127.0.0.0/8,
 * `::1`), a Unix socket (a `host` that is a path), or no host at all (libpq's default socket).
 */
export function isLocalDatabase(databaseUrl: string): boolean {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    return false;
  }
  const host = (url.searchParams.get('host') ?? url.hostname).toLowerCase();
  if (host === '' || host.startsWith('/')) return true;
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127(?:\.\d{1,3}){3}$/.test(host);
}

/**
 * The environment of the developer commands (`pnpm start`, `pnpm db:migrate`, `pnpm gatehook`): NODE_ENV as set,
 * and when unset, `development` only if the database is on this machine ({@link isLocalDatabase}); otherwise it
 * stays unset, which counts as production (no development key, no loopback receivers, no development CA).
 */
export function developerCommandEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  if (env.NODE_ENV) return { ...env };
  return isLocalDatabase(env.DATABASE_URL || DEFAULT_DATABASE_URL) ? { ...env, NODE_ENV: 'development' } : { ...env };
}

const envSchema = z.object({
  // Unset is treated as production: a deployment that forgot NODE_ENV must not fall back to the development key.
  NODE_ENV: z.enum(['development', 'test', 'production']).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: z.string().min(1).default(DEFAULT_DATABASE_URL),
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379'),
  /** When set, every connection is a Redis Cluster client seeded by these URLs and REDIS_URL is ignored (CONTRACT 16). */
  REDIS_CLUSTER_NODES: clusterNodes.default([]),
  /** The deliver and fan-out work is spread over this many queues, each with a hash tag of its own (CONTRACT 16). */
  DELIVERY_QUEUE_SHARDS: integer(1, 256).default(8),
  /**
   * A worker whose queue has jobs waiting, while it has free concurrency and has taken none of them for this long,
   * recreates that queue's worker (its blocking connection stopped taking jobs).
   */
  QUEUE_WATCHDOG_MS: integer(500, 3_600_000).default(30_000),
  PORT: integer(0, 65535).default(3000),
  WORKER_PORT: integer(0, 65535).default(3001),
  /** The API's gRPC port for Envoy's rate limit service (CONTRACT 19); 0 turns it off. */
  GRPC_PORT: integer(0, 65535).default(3002),
  /** PEM certificate chain and key files: with both set the gRPC port speaks TLS, else plaintext HTTP/2. */
  GRPC_TLS_CERT_FILE: z.string().default(''),
  GRPC_TLS_KEY_FILE: z.string().default(''),
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : - only')
    .default('gatehook'),
  RECONCILE_INTERVAL_MS: integer(100).default(5000),
  GATEHOOK_ENCRYPTION_KEY: z.string().optional(),
  DELIVERY_RETRY_SCHEDULE: retrySchedule.default([0, 5, 300, 1800, 7200, 18000, 36000, 36000]),
  DELIVERY_TIMEOUT_MS: integer(100, 600_000).default(15000),
  DELIVERY_CONCURRENCY: integer(1, 10_000).default(50),
  /** Most requests one webhook may have in flight per worker process; its adaptive limit moves below it. */
  DELIVERY_ENDPOINT_CONCURRENCY: integer(1, 10_000).default(50),
  /** Optional ceiling of requests in flight per origin per worker process; 0: none (CONTRACT 15). */
  DELIVERY_ORIGIN_CONCURRENCY: integer(0, 10_000).default(0),
  /**
   * Render threads (CONTRACT 15): the worker's pool plans fan-outs, batch flushes and replays (one per core by
   * default, at least 2); the API's renders previews and test sends. An organisation over its render budget holds
   * at most all but one of them.
   */
  RENDER_THREADS: integer(2, 256).default(() => Math.max(2, availableParallelism())),
  API_RENDER_THREADS: integer(2, 256).default(2),
  BATCH_LINGER_MS: integer(0, 600_000).default(1000),
  CIRCUIT_BREAKER_SECONDS: integer(1).default(259200),
  SECRET_ROTATION_OVERLAP_SECONDS: integer(0).default(86400),
  DELIVERY_RETENTION_DAYS: integer(1).default(30),
  /** Width of the time partitions of deliveries, attempts and audit events (CONTRACT 16, docs/database.md). */
  HISTORY_PARTITION: z.enum(['hour', 'day', 'week', 'month']).default('day'),
  RETRY_AFTER_CAP_SECONDS: integer(0).default(3600),
  EGRESS_ALLOW_CIDRS: z.string().default(''),
  EGRESS_EXTRA_CA_FILE: z.string().default(''),
  /**
   * HTTP CONNECT proxy every delivery and test send goes through (CONTRACT 18); empty: none. The message never
   * quotes the value, which may carry the proxy's credentials.
   */
  EGRESS_PROXY_URL: z
    .string()
    .default('')
    .refine((value) => value === '' || isProxyUrl(value), 'must be an http:// or https:// URL of a CONNECT proxy (scheme, host, optional port and credentials; no path)'),
  /**
   * Recover/replay (CONTRACT 11): items per step, the webhook's due backlog a step waits under, the deliveries a
   * second a task sends at most (0: no cap), a step's lease.
   */
  TASK_PAGE_SIZE: integer(1, 1000).default(100),
  TASK_MAX_BACKLOG: integer(1, 100_000).default(20),
  TASK_SEND_RATE: integer(0, 10_000).default(100),
  TASK_LEASE_MS: integer(1000, 600_000).default(30_000),
  RATE_LIMIT_STORE: z.enum(['memory', 'redis']).default('memory'),
  RATE_LIMIT_FAIL_MODE: z.enum(['open', 'closed']).default('open'),
  RATE_LIMIT_REDIS_TIMEOUT_MS: integer(1, 10_000).default(250),
  /** When set, GET /metrics (API and worker) needs `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().min(MIN_METRICS_TOKEN_LENGTH, `must be at least ${MIN_METRICS_TOKEN_LENGTH} characters`).optional(),
  /** Memory store: most live counters of one organisation (it evicts only its own past this) and of the process. */
  RATE_LIMIT_MEMORY_COUNTERS_PER_ORG: integer(1).default(100_000),
  RATE_LIMIT_MEMORY_COUNTERS: integer(1).default(1_000_000),
  /**
   * Traces (CONTRACT 17), the standard OpenTelemetry variables: with an endpoint set, the process exports its
   * spans over OTLP/HTTP (packages/core/src/tracing.ts); without one, no SDK is started.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  /** The traces endpoint itself (used as is, where the base endpoint gets `/v1/traces` appended). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.default('http/protobuf'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
  /** Headers of every export request (`key=value,key2=value2`, values URL-encoded), e.g. a backend's API key. */
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders.default({}),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: otlpHeaders.default({}),
  /** Longest one export may take, its retries included, before it is given up (ms; the OpenTelemetry default). */
  OTEL_EXPORTER_OTLP_TIMEOUT: integer(1, 600_000).default(10_000),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: integer(1, 600_000).optional(),
  OTEL_SERVICE_NAME: z.string().optional(),
  /** Most milliseconds an ended span waits before it is exported (in a batch with the others). */
  OTEL_BSP_SCHEDULE_DELAY: integer(0, 600_000).default(5_000),
  /** `true` turns traces off whatever the endpoint. */
  OTEL_SDK_DISABLED: z.enum(['true', 'false']).default('false'),
  /** Management API throttling per API key (CONTRACT 14); 0 turns it off. */
  API_RATE_LIMIT_PER_SECOND: integer(0, 1_000_000).default(50),
  API_RATE_LIMIT_BURST: integer(1, 1_000_000).default(200),
  /** Verified API keys cached per process (by hash); revocations reach every process through Redis at once. */
  API_KEY_CACHE_MAX: integer(1).default(10_000),
  /** Backstop when a revocation message is lost (Redis down): a cached key is checked again at least this often. */
  API_KEY_CACHE_TTL_MS: integer(100, 3_600_000).default(30_000),
  /**
   * Unknown (or revoked) key hashes remembered per process, in a cache of their own: a flood of random keys evicts
   * only other unknown keys, never a verified one.
   */
  API_KEY_MISS_CACHE_MAX: integer(1).default(1_000),
});

export type Config = Omit<z.output<typeof envSchema>, 'GATEHOOK_ENCRYPTION_KEY' | 'NODE_ENV'> & {
  NODE_ENV: 'development' | 'test' | 'production';
  GATEHOOK_ENCRYPTION_KEY: string;
  /** Warnings to log once at start-up (development key in use, egress exemptions). */
  startupWarnings: string[];
};

/** Thrown when the environment is invalid; its message lists every bad variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment once, failing fast with a readable message naming every invalid variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  // An empty variable means "not set", as in most deployment tools.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = envSchema.safeParse(present);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const parsed = result.data;
  const startupWarnings: string[] = [];
  let key = parsed.GATEHOOK_ENCRYPTION_KEY;
  const nodeEnv = parsed.NODE_ENV ?? 'production';
  if (!key) {
    if (nodeEnv === 'production') {
      throw new ConfigError(
        'invalid configuration:\n  GATEHOOK_ENCRYPTION_KEY: required unless NODE_ENV is development or test ' +
          `(NODE_ENV is ${parsed.NODE_ENV === undefined ? 'not set, which counts as production' : 'production'}); ` +
          'the development key is never used implicitly',
      );
    }
    key = DEVELOPMENT_ENCRYPTION_KEY;
    startupWarnings.push(
      'GATEHOOK_ENCRYPTION_KEY is not set: using the fixed DEVELOPMENT key. Secrets at rest are NOT protected. ' +
        'Set GATEHOOK_ENCRYPTION_KEY (32 random bytes, base64) before storing real data.',
    );
  }
  for (const [index, entry] of key.split(',').entries()) {
    if (Buffer.from(entry.trim(), 'base64').length !== 32) {
      throw new ConfigError(
        `invalid configuration:\n  GATEHOOK_ENCRYPTION_KEY: key ${index + 1} must be 32 bytes encoded as base64`,
      );
    }
  }
  if (parsed.EGRESS_ALLOW_CIDRS) {
    startupWarnings.push(
      `EGRESS_ALLOW_CIDRS is set (${parsed.EGRESS_ALLOW_CIDRS}): deliveries may reach these non-public addresses. ` +
        'This is for development and tests only.',
    );
  }
  if (Boolean(parsed.GRPC_TLS_CERT_FILE) !== Boolean(parsed.GRPC_TLS_KEY_FILE)) {
    throw new ConfigError('invalid configuration:\n  GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE: set both (TLS on the gRPC port) or neither (plaintext)');
  }
  const metrics = openMetricsWarning({ NODE_ENV: nodeEnv, METRICS_TOKEN: parsed.METRICS_TOKEN });
  if (metrics) startupWarnings.push(metrics);
  return { ...parsed, NODE_ENV: nodeEnv, GATEHOOK_ENCRYPTION_KEY: key, startupWarnings };
}

/**
 * The start-up warning of a production process (NODE_ENV production, or unset) whose `/metrics` answers anyone
 * because METRICS_TOKEN is not set; null otherwise. Development and test keep `/metrics` open without a word.
 */
export function openMetricsWarning(config: { NODE_ENV: Config['NODE_ENV']; METRICS_TOKEN?: string | undefined }): string | null {
  if (config.NODE_ENV !== 'production' || config.METRICS_TOKEN) return null;
  return (
    'METRICS_TOKEN is not set: GET /metrics answers anyone who reaches this port (queue depths, tenants\' traffic, ' +
    'process internals). Set METRICS_TOKEN (at least ' + `${MIN_METRICS_TOKEN_LENGTH} characters) wherever the port is reachable from outside.`
  );
}
