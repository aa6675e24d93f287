import type { RequestListener } from 'node:http';
import express, { type Express } from 'express';
import type { RedisConnection } from '@gatehook/core/redis';
import type { Config } from '@gatehook/core/config';
import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import { AppError } from '@gatehook/core/errors';
import { metricsAuthorised } from '@gatehook/core/metrics-auth';
import { GATEHOOK_VERSION } from '@gatehook/core/version';
import type { Db } from '@gatehook/db/client';
import { registerStatementMetric } from '@gatehook/db/metrics';
import type { Sender } from '@gatehook/delivery/render/request';
import type { DeliveryQueues } from '@gatehook/delivery';
import type { RenderPool } from '@gatehook/delivery/render/pool';
import { WebhookPace } from '@gatehook/delivery/flow/webhook-pace';
import { parseCidrList, type HostLookup } from '@gatehook/egress/address-policy';
import type { RateLimiter } from '@gatehook/ratelimit/limiter';
import { MemoryCounterStore } from '@gatehook/ratelimit/stores/memory';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { consoleRouter } from './http/console';
import type { ApiKeyCache } from './http/api-keys';
import { CHECK_ROUTE, checkPath } from './http/check-path';
import { withFastPaths, type FastHandler } from './http/fast-path';
import { errorHandler, notFoundHandler } from './http/errors';
import { buildOpenApi } from './http/openapi';
import { mountRoutes, type AnyRoute } from './http/route';
import { ManagementThrottle } from './http/throttle';
import { auditEventRoutes, INGEST_ROUTE, ingestionPath, MAX_INGEST_BODY_BYTES } from './routes/audit-events';
import { deliveryRoutes } from './routes/deliveries';
import { destinationRoutes } from './routes/destinations';
import { eventTypeRoutes } from './routes/event-types';
import { operatorViewRoutes } from './routes/operator-view';
import { notificationRoutes } from './routes/notifications';
import { healthRoutes } from './routes/health';
import { rateLimitCheckRoutes } from './routes/rate-limit-check';
import { rateLimitRuleRoutes } from './routes/rate-limit-rules';
import { taskRoutes } from './routes/tasks';
import { webhookRoutes } from './routes/webhooks';
import { commitHooks } from './services/commit-hooks';
import { rateLimitCheck, type RateLimitCheck } from './services/rate-limit-check';
import { WebhookStats } from './services/webhook-stats';

export interface AppDeps {
  config: Config;
  db: Db;
  redis: RedisConnection;
  box: SecretBox;
  logger: Logger;
  /** Producer of delivery jobs; without it, ingested events are fanned out by the worker's reconciler. */
  queues?: DeliveryQueues;
  /** Worker threads that render previews and test sends (CONTRACT 15); started and closed by the caller. */
  render: RenderPool;
  /** Outbound sender for test sends (the egress client). */
  send?: Sender;
  /** The rate limiter behind POST /rate-limits/check (packages/ratelimit, started by the caller). */
  limiter: RateLimiter;
  /** Verified API keys (per process, following revocations through the invalidation bus). */
  apiKeys: ApiKeyCache;
  /** Host name resolution for the address policy (tests inject one). */
  lookup?: HostLookup;
}

/** The API without listening, so tests and main.ts share it: the Express app and the server's request listener. */
export interface Api {
  app: Express;
  /** What the HTTP server calls: the check path ahead of Express, everything else through the app. */
  listener: RequestListener;
  /** The rate limit check behind POST /rate-limits/check, for the gRPC interface to share (CONTRACT 19). */
  check: RateLimitCheck;
}

/** Builds the API (see {@link Api}). */
export function createApi(deps: AppDeps): Api {
  const app = createApp(deps);
  return {
    app: app.express,
    listener: withFastPaths(app.fast, app.express, deps.logger, app.observe),
    check: app.check,
  };
}

function createApp(deps: AppDeps): {
  express: Express;
  fast: FastHandler[];
  observe: (route: string, status: number, seconds: number) => void;
  check: RateLimitCheck;
} {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gatehook_api_' });
  registerStatementMetric(registry);
  const requestDuration = new Histogram({
    name: 'gatehook_http_request_duration_seconds',
    help: 'API request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const decisions = new Counter({
    name: 'gatehook_rate_limit_decisions_total',
    help: 'Rate limit checks by outcome (allowed, denied), source (memory, redis, fallback, fail_open, fail_closed, no_rules) and interface (http, grpc)',
    labelNames: ['outcome', 'source', 'interface'],
    registers: [registry],
  });

  // The gateway's hot paths, answered before Express for their exact URLs (./http/fast-path.ts): the check
  // (CONTRACT 8; docs/rate-limits.md "The check path"), also a route ahead of every middleware below for its other
  // spellings, and ingestion (CONTRACT 6), whose other spellings take its regular route.
  const check = rateLimitCheck(deps.limiter, decisions);
  const checkFast = checkPath({ keys: deps.apiKeys, check });
  app.post(CHECK_ROUTE, checkFast.route);
  const ingestDeps = { db: deps.db, queues: deps.queues, logger: deps.logger };
  const fast = [checkFast, ingestionPath(deps.apiKeys, ingestDeps)];
  const observe = (route: string, status: number, seconds: number) =>
    requestDuration.observe({ method: 'POST', route, status: String(status) }, seconds);

  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      requestDuration.observe(
        { method: req.method, route: req.route?.path ?? 'unmatched', status: String(res.statusCode) },
        ms / 1000,
      );
      // The route template, never the raw URL: query strings may carry cursors, paths carry nothing secret.
      deps.logger.info(
        { method: req.method, route: req.route?.path ?? 'unmatched', status: res.statusCode, ms: Math.round(ms) },
        'request',
      );
    });
    next();
  });
  const jsonTypes = ['application/json', 'application/*+json'];
  // Ingestion takes batches of up to 1000 events (5 MB); every other body is at most 1 MB.
  app.use(INGEST_ROUTE, express.json({ limit: MAX_INGEST_BODY_BYTES, type: jsonTypes }));
  app.use(express.json({ limit: '1mb', type: jsonTypes }));

  const hooks = commitHooks({
    redis: deps.redis,
    prefix: deps.config.REDIS_PREFIX,
    queues: deps.queues,
    logger: deps.logger,
  });
  const routes: AnyRoute[] = [
    ...healthRoutes(deps.db, deps.queues ? () => deps.queues!.roundTrip() : () => deps.redis.ping()),
    ...eventTypeRoutes(),
    ...destinationRoutes(deps.render),
    ...auditEventRoutes(ingestDeps),
    ...deliveryRoutes({
      db: deps.db,
      box: deps.box,
      queues: deps.queues,
      send: deps.send,
      render: deps.render,
      pace: new WebhookPace(deps.redis, { prefix: deps.config.REDIS_PREFIX, logger: deps.logger }),
    }),
    ...operatorViewRoutes({
      db: deps.db,
      render: deps.render,
      rotationOverlapSeconds: deps.config.SECRET_ROTATION_OVERLAP_SECONDS,
      stats: new WebhookStats(deps.config.DELIVERY_TIMEOUT_MS),
    }),
    ...taskRoutes({ db: deps.db, queues: deps.queues, retentionDays: deps.config.DELIVERY_RETENTION_DAYS }),
    ...notificationRoutes(deps.db),
    ...webhookRoutes({
      db: deps.db,
      box: deps.box,
      egressAllow: parseCidrList(deps.config.EGRESS_ALLOW_CIDRS),
      rotationOverlapSeconds: deps.config.SECRET_ROTATION_OVERLAP_SECONDS,
      ...(deps.lookup ? { lookup: deps.lookup } : {}),
      hooks,
    }),
    ...rateLimitCheckRoutes({ check }),
    ...rateLimitRuleRoutes({
      db: deps.db,
      redis: deps.redis,
      redisPrefix: deps.config.REDIS_PREFIX,
      logger: deps.logger,
      hooks,
    }),
  ];
  const openapi = buildOpenApi(routes, GATEHOOK_VERSION);
  app.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  app.get('/metrics', async (req, res) => {
    if (!metricsAuthorised(req.headers.authorization, deps.config.METRICS_TOKEN)) {
      throw new AppError('unauthorized', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
    }
    res.set('content-type', registry.contentType).send(await registry.metrics());
  });

  app.use('/console', consoleRouter());
  // Management throttling counts where rule counters do: in Redis when they are shared, else in this process
  // (its own memory store, so that tool-key floods of an organisation cannot evict its keys' throttle counters).
  const throttle =
    deps.config.API_RATE_LIMIT_PER_SECOND > 0
      ? new ManagementThrottle({
          perSecond: deps.config.API_RATE_LIMIT_PER_SECOND,
          burst: deps.config.API_RATE_LIMIT_BURST,
          store: deps.limiter.store.kind === 'redis' ? deps.limiter.store : new MemoryCounterStore(),
          logger: deps.logger,
        })
      : null;
  const router = express.Router();
  mountRoutes(router, deps.apiKeys, throttle, routes);
  app.use(router);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return { express: app, fast, observe, check };
}
