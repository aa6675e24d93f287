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

const retrySchedule = z.string().transform((value, ctx) => {
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
  const urls = value
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
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
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      url.hostname !== '' &&
      (url.pathname === '/' || url.pathname === '') &&
      url.search === '' &&
      url.hash === ''
    );
  } catch {
    return false;
  }
}

/** OTLP over HTTP only: `grpc` would need a second transport for the same spans. */
const otlpProtocol = z.enum(['http/protobuf', 'http/json'], {
  message: 'must be http/protobuf or http/json (grpc is not supported)',
});

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
export function developerCommandEnv(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  if (env.NODE_ENV) return { ...env };
  return isLocalDatabase(env.DATABASE_URL || DEFAULT_DATABASE_URL) ? { ...env, NODE_ENV: 'development' } : { ...env };
}

/** The sections of docs/configuration.md, in the order they appear there. */
export const CONFIG_GROUPS = {
  processes: 'Processes and storage',
  api: 'Management API',
  delivery: 'Delivery',
  egress: 'Egress',
  tasks: 'Recover and replay',
  rateLimits: 'Rate limits',
  observability: 'Observability',
  development: 'Development',
} as const;

export type ConfigGroup = keyof typeof CONFIG_GROUPS;

/**
 * What docs/configuration.md says of one variable (kept in the schema's metadata, read by `configVariables`):
 * its section, its meaning, the default as a reader should see it where the schema's default is computed or is not
 * the variable's own text, and a page of docs/ that tells more.
 */
export type ConfigDoc = {
  group: ConfigGroup;
  description: string;
  defaultLabel?: string;
  see?: string;
};

const about = (
  group: ConfigGroup,
  description: string,
  more: Omit<ConfigDoc, 'group' | 'description'> = {},
): ConfigDoc => ({
  group,
  description,
  ...more,
});

/** The environment's schema; each variable's metadata ({@link ConfigDoc}) is what docs/configuration.md says of it. */
export const envSchema = z.object({
  // Unset is treated as production: a deployment that forgot NODE_ENV must not fall back to the development key.
  NODE_ENV: z
    .enum(['development', 'test', 'production'])
    .optional()
    .meta(
      about(
        'development',
        'Only `development` or `test` may run without `GATEHOOK_ENCRYPTION_KEY` (on the fixed development key, with a ' +
          'warning); unset or `production` refuses to start without one. `pnpm start`, `pnpm db:migrate` and `pnpm ' +
          'gatehook` set `development` when it is unset and `DATABASE_URL` is on this machine (loopback or a Unix ' +
          'socket, as the default is), never for a database elsewhere; `pnpm start:api`/`start:worker` and the Docker ' +
          'image do not.',
        { defaultLabel: 'unset (counts as `production`)', see: 'operations.md' },
      ),
    ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .meta(about('observability', 'pino log level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.')),
  DATABASE_URL: z
    .string()
    .min(1)
    .default(DEFAULT_DATABASE_URL)
    .meta(about('processes', 'PostgreSQL connection string.')),
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379').meta(about('processes', 'Redis (one node).')),
  REDIS_CLUSTER_NODES: clusterNodes
    .default([])
    .meta(
      about(
        'processes',
        'Comma-separated seed URLs of a Redis Cluster (`redis://host:port`, `rediss://user:pass@host:port`; TLS and ' +
          'credentials from the URL); when set, every connection is a cluster client and `REDIS_URL` is ignored.',
        { see: 'redis-cluster.md' },
      ),
    ),
  DELIVERY_QUEUE_SHARDS: integer(1, 256)
    .default(8)
    .meta(
      about(
        'processes',
        'The fan-out and deliver work is spread over this many queues, each with a hash tag of its own.',
        { see: 'redis-cluster.md' },
      ),
    ),
  QUEUE_WATCHDOG_MS: integer(500, 3_600_000)
    .default(30_000)
    .meta(
      about(
        'processes',
        'A worker that has free concurrency and has taken no job of a queue on which jobs wait for this long recreates ' +
          "that queue's worker (its blocking connection stopped taking jobs).",
        { see: 'redis-cluster.md' },
      ),
    ),
  PORT: integer(0, 65535)
    .default(3000)
    .meta(about('processes', 'API port (REST API, console, `/healthz`, `/readyz`, `/metrics`).')),
  WORKER_PORT: integer(0, 65535)
    .default(3001)
    .meta(about('processes', "The worker's `/healthz`, `/readyz` and `/metrics`.")),
  GRPC_PORT: integer(0, 65535)
    .default(3002)
    .meta(
      about(
        'rateLimits',
        "The API's gRPC port: it serves Envoy's rate limit service (`envoy.service.ratelimit.v3.RateLimitService/" +
          'ShouldRateLimit`) over HTTP/2, plaintext unless `GRPC_TLS_CERT_FILE` and `GRPC_TLS_KEY_FILE` are set; `0` ' +
          'turns it off.',
        { see: 'rate-limits.md' },
      ),
    ),
  GRPC_TLS_CERT_FILE: z
    .string()
    .default('')
    .meta(
      about(
        'rateLimits',
        'PEM certificate chain of the gRPC port; with `GRPC_TLS_KEY_FILE` (both or neither) the port speaks TLS.',
      ),
    ),
  GRPC_TLS_KEY_FILE: z
    .string()
    .default('')
    .meta(about('rateLimits', 'PEM private key of the gRPC port, set with `GRPC_TLS_CERT_FILE`.')),
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : - only')
    .default('gatehook')
    .meta(
      about(
        'processes',
        'Prefix of every Redis key, queue and channel, so one Redis can serve several deployments (letters, digits, ' +
          '`_ . : -`; no braces: the service adds the hash tags).',
      ),
    ),
  RECONCILE_INTERVAL_MS: integer(100)
    .default(5000)
    .meta(about('delivery', 'How often the worker re-enqueues what the queues lost.', { see: 'delivery.md' })),
  GATEHOOK_ENCRYPTION_KEY: z
    .string()
    .optional()
    .meta(
      about(
        'processes',
        'Comma-separated list of 32-byte keys in base64 that encrypt secrets at rest (AES-256-GCM); the first ' +
          "encrypts, all decrypt. Generate one with `node -e \"console.log(require('crypto').randomBytes(32).toString('base64'))\"`.",
        { defaultLabel: 'the development key outside production (with a warning); required in production' },
      ),
    ),
  DELIVERY_RETRY_SCHEDULE: retrySchedule.default([0, 5, 300, 1800, 7200, 18000, 36000, 36000]).meta(
    about('delivery', 'Seconds before each of the 8 attempts (±20% jitter on every non-zero delay).', {
      see: 'delivery.md',
    }),
  ),
  DELIVERY_TIMEOUT_MS: integer(100, 600_000)
    .default(15000)
    .meta(about('delivery', 'Per-attempt timeout (connect and response).')),
  DELIVERY_CONCURRENCY: integer(1, 10_000)
    .default(50)
    .meta(
      about(
        'delivery',
        'Requests in flight per worker process, shared fairly between organisations, then between their webhooks.',
      ),
    ),
  DELIVERY_ENDPOINT_CONCURRENCY: integer(1, 10_000)
    .default(50)
    .meta(
      about(
        'delivery',
        "Most requests one webhook may have in flight per worker process; below it each webhook's limit adapts to its " +
          'receiver ("Isolation").',
        { see: 'delivery.md' },
      ),
    ),
  DELIVERY_ORIGIN_CONCURRENCY: integer(0, 10_000)
    .default(0)
    .meta(
      about(
        'delivery',
        "Optional ceiling of requests in flight per worker process to one origin; `0`: none (many tenants' webhooks share an origin).",
      ),
    ),
  RENDER_THREADS: integer(2, 256)
    .default(() => Math.max(2, availableParallelism()))
    .meta(
      about(
        'delivery',
        'Worker threads per worker process that match, render, pack and seal (they plan fan-outs, batch flushes and ' +
          'replays); shared fairly between organisations: one organisation over its render budget holds at most all but one.',
        { defaultLabel: 'cores, at least `2`', see: 'delivery.md' },
      ),
    ),
  API_RENDER_THREADS: integer(2, 256)
    .default(2)
    .meta(
      about(
        'api',
        'Worker threads per API process that render previews and test sends, so the event loop keeps answering other ' +
          'requests; one organisation over its render budget holds at most all but one.',
      ),
    ),
  BATCH_LINGER_MS: integer(0, 600_000)
    .default(1000)
    .meta(about('delivery', 'Longest an event waits for its batch to fill (webhooks with `max_events` > 1).')),
  CIRCUIT_BREAKER_SECONDS: integer(1)
    .default(259200)
    .meta(
      about('delivery', 'Continuous failure (72 hours by default) after which a webhook is disabled.', {
        see: 'delivery.md',
      }),
    ),
  SECRET_ROTATION_OVERLAP_SECONDS: integer(0)
    .default(86400)
    .meta(
      about('delivery', 'How long the previous signing secret stays valid after a rotation.', { see: 'webhooks.md' }),
    ),
  DELIVERY_RETENTION_DAYS: integer(1)
    .default(30)
    .meta(about('processes', 'Delivery history (deliveries, attempts, stored bodies) is kept this long.')),
  HISTORY_PARTITION: z
    .enum(['hour', 'day', 'week', 'month'])
    .default('day')
    .meta(
      about(
        'processes',
        'Width of the time partitions of deliveries, attempts and audit events: `hour`, `day`, `week` or `month`; ' +
          'retention drops whole partitions, so history is kept up to one width longer.',
        { see: 'database.md' },
      ),
    ),
  RETRY_AFTER_CAP_SECONDS: integer(0)
    .default(3600)
    .meta(about('delivery', "Cap on a 429's `Retry-After`.", { see: 'delivery.md' })),
  EGRESS_ALLOW_CIDRS: z
    .string()
    .default('')
    .meta(
      about(
        'development',
        'Development and tests only: comma-separated CIDRs (e.g. `127.0.0.1/32`) exempt from the non-public-address ' +
          'rule; logged as a warning at start-up.',
      ),
    ),
  EGRESS_EXTRA_CA_FILE: z
    .string()
    .default('')
    .meta(about('egress', 'Extra PEM CA trusted for deliveries (receivers with a certificate of a private CA).')),
  // The refinement's message never quotes the value, which may carry the proxy's credentials.
  EGRESS_PROXY_URL: z
    .string()
    .default('')
    .refine(
      (value) => value === '' || isProxyUrl(value),
      'must be an http:// or https:// URL of a CONNECT proxy (scheme, host, optional port and credentials; no path)',
    )
    .meta(
      about(
        'egress',
        '`http://` or `https://` URL of an HTTP CONNECT proxy every delivery and test send goes through (static egress ' +
          'IPs); credentials in the URL (`http://user:pass@proxy:3128`) are sent as `Proxy-Authorization` and never ' +
          'logged. The service still resolves and checks the destination and asks the proxy to CONNECT to the checked ' +
          'address ("Egress proxy").',
        { see: 'delivery.md' },
      ),
    ),
  TASK_PAGE_SIZE: integer(1, 1000)
    .default(100)
    .meta(about('tasks', 'Items a recover or replay task handles per step.', { see: 'recover-replay.md' })),
  TASK_MAX_BACKLOG: integer(1, 100_000)
    .default(20)
    .meta(
      about('tasks', 'A task adds work only while its webhook has fewer due deliveries than this.', {
        see: 'recover-replay.md',
      }),
    ),
  TASK_SEND_RATE: integer(0, 10_000)
    .default(100)
    .meta(
      about(
        'tasks',
        'Deliveries a second one task sends at most, on an even schedule; `0`: no cap, only the backlog bound ("Pacing").',
        {
          see: 'recover-replay.md',
        },
      ),
    ),
  TASK_LEASE_MS: integer(1000, 600_000)
    .default(30_000)
    .meta(
      about('tasks', 'How long a step is held before another worker may continue the task.', {
        see: 'recover-replay.md',
      }),
    ),
  RATE_LIMIT_STORE: z
    .enum(['memory', 'redis'])
    .default('memory')
    .meta(
      about(
        'rateLimits',
        '`memory` (each process counts on its own) or `redis` (one shared counter across every process).',
        { see: 'rate-limits.md' },
      ),
    ),
  RATE_LIMIT_FAIL_MODE: z
    .enum(['open', 'closed'])
    .default('open')
    .meta(
      about(
        'rateLimits',
        'With `redis`, what a check does when Redis is unreachable: `open` counts in this process, `closed` denies.',
      ),
    ),
  RATE_LIMIT_REDIS_TIMEOUT_MS: integer(1, 10_000)
    .default(250)
    .meta(about('rateLimits', 'With `redis`, a check slower than this counts as Redis being unreachable.')),
  METRICS_TOKEN: z
    .string()
    .min(MIN_METRICS_TOKEN_LENGTH, `must be at least ${MIN_METRICS_TOKEN_LENGTH} characters`)
    .optional()
    .meta(
      about(
        'observability',
        `When set (at least ${MIN_METRICS_TOKEN_LENGTH} characters), \`GET /metrics\` on the API and the worker needs ` +
          '`Authorization: Bearer <token>` and answers 401 without it; unset leaves `/metrics` open, so set it wherever ' +
          'the ports are reachable from outside (unset in production, i.e. `NODE_ENV` production or unset, logs a ' +
          'warning at start-up).',
        { see: 'operations.md' },
      ),
    ),
  RATE_LIMIT_MEMORY_COUNTERS_PER_ORG: integer(1)
    .default(100_000)
    .meta(about('rateLimits', 'Memory store: live counters of one organisation (past it, only its own oldest go).')),
  RATE_LIMIT_MEMORY_COUNTERS: integer(1)
    .default(1_000_000)
    .meta(about('rateLimits', 'Memory store: live counters of the process.')),
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .url({ protocol: /^https?$/ })
    .optional()
    .meta(
      about(
        'observability',
        'Traces: when set (an `http://` or `https://` base URL), the API and the worker export spans over OTLP/HTTP to ' +
          '`<endpoint>/v1/traces`; unset, no OpenTelemetry SDK is started and nothing is exported.',
        { see: 'operations.md#traces' },
      ),
    ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z
    .url({ protocol: /^https?$/ })
    .optional()
    .meta(
      about(
        'observability',
        'The traces URL itself (used as is); turns traces on like the base endpoint, and wins over it.',
      ),
    ),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol
    .default('http/protobuf')
    .meta(about('observability', '`http/protobuf` or `http/json`; `grpc` is refused at start-up.')),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional().meta(
    about('observability', 'The protocol of traces; wins over `OTEL_EXPORTER_OTLP_PROTOCOL`.', {
      defaultLabel: '`OTEL_EXPORTER_OTLP_PROTOCOL`',
    }),
  ),
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders
    .default({})
    .meta(
      about(
        'observability',
        "Headers of every export request: `key=value` pairs separated by commas, values URL-encoded (e.g. a tracing backend's API key); never logged.",
      ),
    ),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: otlpHeaders
    .default({})
    .meta(
      about(
        'observability',
        'Headers of the traces export requests, in the same format; they win over `OTEL_EXPORTER_OTLP_HEADERS`.',
      ),
    ),
  OTEL_EXPORTER_OTLP_TIMEOUT: integer(1, 600_000)
    .default(10_000)
    .meta(
      about('observability', 'Longest one export may take (ms), its retries included, before its spans are given up.'),
    ),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: integer(1, 600_000)
    .optional()
    .meta(
      about('observability', 'The same for traces; wins over `OTEL_EXPORTER_OTLP_TIMEOUT`.', {
        defaultLabel: '`OTEL_EXPORTER_OTLP_TIMEOUT`',
      }),
    ),
  OTEL_SERVICE_NAME: z
    .string()
    .optional()
    .meta(
      about('observability', 'The `service.name` of the spans of the process.', {
        defaultLabel: '`gatehook-api` / `gatehook-worker`',
      }),
    ),
  OTEL_BSP_SCHEDULE_DELAY: integer(0, 600_000)
    .default(5_000)
    .meta(
      about(
        'observability',
        'Most milliseconds an ended span waits before it is exported, in a batch with the others.',
      ),
    ),
  OTEL_SDK_DISABLED: z
    .enum(['true', 'false'])
    .default('false')
    .meta(about('observability', '`true` turns traces off whatever the endpoint.')),
  API_RATE_LIMIT_PER_SECOND: integer(0, 1_000_000)
    .default(50)
    .meta(
      about(
        'api',
        'Management API requests per second per API key; `0` turns throttling off (ingestion and rate limit checks are exempt).',
        {
          see: 'rate-limits.md',
        },
      ),
    ),
  API_RATE_LIMIT_BURST: integer(1, 1_000_000).default(200).meta(about('api', 'Management API burst per API key.')),
  API_KEY_CACHE_MAX: integer(1)
    .default(10_000)
    .meta(
      about(
        'api',
        'Verified API keys cached per process (by hash); revocations reach every process through Redis at once.',
      ),
    ),
  API_KEY_CACHE_TTL_MS: integer(100, 3_600_000)
    .default(30_000)
    .meta(
      about(
        'api',
        'Backstop when a revocation message is lost (Redis down): a cached key is checked again at least this often.',
      ),
    ),
  API_KEY_MISS_CACHE_MAX: integer(1)
    .default(1_000)
    .meta(
      about(
        'api',
        'Unknown or revoked key hashes remembered per process, in a cache of their own: a flood of random keys evicts ' +
          'only other unknown keys, never a verified one.',
      ),
    ),
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
    throw new ConfigError(
      'invalid configuration:\n  GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE: set both (TLS on the gRPC port) or neither (plaintext)',
    );
  }
  const metrics = openMetricsWarning({ NODE_ENV: nodeEnv, METRICS_TOKEN: parsed.METRICS_TOKEN });
  if (metrics) startupWarnings.push(metrics);
  return { ...parsed, NODE_ENV: nodeEnv, GATEHOOK_ENCRYPTION_KEY: key, startupWarnings };
}

/**
 * The start-up warning of a production process (NODE_ENV production, or unset) whose `/metrics` answers anyone
 * because METRICS_TOKEN is not set; null otherwise. Development and test keep `/metrics` open without a word.
 */
export function openMetricsWarning(config: {
  NODE_ENV: Config['NODE_ENV'];
  METRICS_TOKEN?: string | undefined;
}): string | null {
  if (config.NODE_ENV !== 'production' || config.METRICS_TOKEN) return null;
  return (
    "METRICS_TOKEN is not set: GET /metrics answers anyone who reaches this port (queue depths, tenants' traffic, " +
    'process internals). Set METRICS_TOKEN (at least ' +
    `${MIN_METRICS_TOKEN_LENGTH} characters) wherever the port is reachable from outside.`
  );
}
