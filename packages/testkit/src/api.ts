import { closeRedis } from '@gatehook/core/service';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { createApi } from '@gatehook/api/app';
import { RenderPool } from '@gatehook/delivery/render/pool';
import { startApiKeyCache, type ApiKeyCache } from '@gatehook/api/http/api-keys';
import type { RateLimitCheck } from '@gatehook/api/services/rate-limit-check';
import { startGrpcServer } from '@gatehook/api/grpc/server';
import { InvalidationBus } from '@gatehook/cache/invalidation';
import { startConfiguredRateLimiter } from '@gatehook/api/services/rate-limit-check';
import { parseConfig, type Config } from '@gatehook/core/config';
import { SecretBox } from '@gatehook/core/encryption';
import { connectRedis, redisTarget, type RedisConnection } from '@gatehook/core/redis';
import { createLogger } from '@gatehook/core/logger';
import type { Permission, Role } from '@gatehook/core/api-keys';
import { issueApiKey } from '@gatehook/db/api-keys';
import { createDb, sqlPool, type Db } from '@gatehook/db/client';
import { DeliveryQueues } from '@gatehook/delivery';
import type { HostLookup } from '@gatehook/egress/address-policy';
import { egressClientFromConfig } from '@gatehook/egress/from-config';
import type { RateLimiter } from '@gatehook/ratelimit/limiter';
import { TEST_DATABASE_URL, TEST_REDIS_CLUSTER_NODES, TEST_REDIS_URL } from './env';

export interface TestApi {
  baseUrl: string;
  /** The gRPC port (Envoy's rate limit service) when started with `grpc: true`, else 0. */
  grpcPort: number;
  config: Config;
  db: Db;
  redis: RedisConnection;
  /** The limiter behind /rate-limits/check, e.g. to wait for its rate_limit.exceeded reports. */
  limiter: RateLimiter;
  /** The API key cache and the check the API serves, for a gRPC server started beside it. */
  apiKeys: ApiKeyCache;
  check: RateLimitCheck;
  /** Calls the API with a key; the body is sent as JSON unless it is a string. */
  call(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** Starts the real API on a free port against the test database and Redis, with its own Redis prefix. */
/** Configuration for a test: the test database and Redis, a Redis prefix of its own, quiet logs. */
export function testConfig(env: Record<string, string> = {}): Config {
  return parseConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: `test_${randomBytes(6).toString('hex')}`,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test',
    // Tests hammer management routes; the throttling tests turn it on with their own values.
    API_RATE_LIMIT_PER_SECOND: '0',
    ...(TEST_REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES: TEST_REDIS_CLUSTER_NODES } : {}),
    ...env,
  });
}

export async function startTestApi(
  options: {
    env?: Record<string, string>;
    config?: Config;
    lookup?: HostLookup;
    logLines?: string[];
    queues?: boolean;
    grpc?: boolean;
  } = {},
): Promise<TestApi> {
  const config = options.config ?? testConfig(options.env);
  const db = createDb(config.DATABASE_URL, { poolSize: 4 });
  const redis = connectRedis(redisTarget(config), { maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  const queues =
    options.queues === false
      ? undefined
      : new DeliveryQueues(redis, config.REDIS_PREFIX, { shards: config.DELIVERY_QUEUE_SHARDS });
  const egress = egressClientFromConfig(config);
  const subscriber = connectRedis(redisTarget(config), { maxRetriesPerRequest: null });
  subscriber.on('error', () => undefined);
  const bus = new InvalidationBus(subscriber, config.REDIS_PREFIX);
  const apiKeys = await startApiKeyCache(config, db, bus);
  const rateLimiting = await startConfiguredRateLimiter(config, db, { queues, bus });
  const render = new RenderPool({ encryptionKey: config.GATEHOOK_ENCRYPTION_KEY, threads: config.API_RENDER_THREADS });
  await render.warm();
  const logger = options.logLines
    ? createLogger({
        name: 'test-api',
        level: 'trace',
        destination: { write: (line: string) => void options.logLines!.push(line) },
      })
    : createLogger({ name: 'test-api', level: 'silent' });
  const api = createApi({
    config,
    render,
    db,
    redis,
    apiKeys,
    limiter: rateLimiting.limiter,
    ...(queues ? { queues } : {}),
    send: (request) => egress.send(request),
    box: new SecretBox(config.GATEHOOK_ENCRYPTION_KEY),
    logger,
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  const server: Server = await new Promise((resolve) => {
    const s = createServer(api.listener).listen(0, '127.0.0.1', () => resolve(s));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const grpc = options.grpc
    ? await startGrpcServer({ port: 0, host: '127.0.0.1', keys: apiKeys, check: api.check, logger })
    : null;
  return {
    baseUrl,
    grpcPort: grpc?.port ?? 0,
    config,
    db,
    redis,
    limiter: rateLimiting.limiter,
    apiKeys,
    check: api.check,
    async call(method, path, { key, body, headers = {} } = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (key) (init.headers as Record<string, string>).authorization = `Bearer ${key}`;
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${baseUrl}${path}`, init);
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, text, body: parsed };
    },
    async close() {
      server.closeAllConnections();
      await Promise.all([new Promise((resolve) => server.close(resolve)), grpc?.close()]);
      await Promise.allSettled([queues?.close(), egress.close(), rateLimiting.close(), render.close()]);
      subscriber.disconnect();
      await Promise.allSettled([db.$disconnect(), closeRedis(redis)]);
    },
  };
}

export interface TestOrg {
  orgId: string;
  admin: string;
  /** A member key holding every permission but not the admin role. */
  member: string;
  /** A member key with no permission at all. */
  nobody: string;
  key(role: Role, permissions: Permission[]): Promise<string>;
}

/** A fresh organisation with an admin key, a member with every permission and a member with none. */
export async function createTestOrg(db: Db): Promise<TestOrg> {
  const orgId = randomUUID();
  const key = async (role: Role, permissions: Permission[]) =>
    (await issueApiKey(sqlPool(db), { orgId, name: `${role}-${permissions.join('+') || 'none'}`, role, permissions }))
      .key;
  return {
    orgId,
    admin: await key('admin', []),
    member: await key('member', [
      'manage_webhooks',
      'view_rate_limits',
      'manage_rate_limits',
      'ingest_events',
      'check_rate_limits',
    ]),
    nobody: await key('member', []),
    key,
  };
}

/**
 * Creates a rate limit rule through the API as the organisation's admin (org-keyed, 60 s window unless `body` says
 * otherwise).
 */
export async function createTestRule(
  api: TestApi,
  org: TestOrg,
  body: Record<string, unknown>,
): Promise<{ id: string }> {
  const response = await api.call('POST', '/rate-limits/rules', {
    key: org.admin,
    body: { name: 'rule', scope: { type: 'mcp_tool_call' }, key_by: ['org'], window_seconds: 60, ...body },
  });
  if (response.status !== 201) throw new Error(`creating a rule answered ${response.status}: ${response.text}`);
  return response.body;
}
