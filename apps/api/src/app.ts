import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import type { Config } from '@gatehook/core/config';
import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import { GATEHOOK_VERSION } from '@gatehook/core/version';
import type { Db } from '@gatehook/db/client';
import type { Sender } from '@gatehook/delivery/attempt';
import type { DeliveryQueues } from '@gatehook/delivery/jobs';
import { parseCidrList, type HostLookup } from '@gatehook/egress/address-policy';
import type { RateLimiter } from '@gatehook/ratelimit/limiter';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { errorHandler, notFoundHandler } from './http/errors';
import { buildOpenApi } from './http/openapi';
import { mountRoutes, type AnyRoute } from './http/route';
import { auditEventRoutes } from './routes/audit-events';
import { deliveryRoutes } from './routes/deliveries';
import { eventTypeRoutes } from './routes/event-types';
import { notificationRoutes } from './routes/notifications';
import { healthRoutes } from './routes/health';
import { rateLimitCheckRoutes } from './routes/rate-limit-check';
import { rateLimitRuleRoutes } from './routes/rate-limit-rules';
import { webhookRoutes } from './routes/webhooks';

export interface AppDeps {
  config: Config;
  db: Db;
  redis: Redis;
  box: SecretBox;
  logger: Logger;
  /** Producer of delivery jobs; without it, ingested events are fanned out by the worker's reconciler. */
  queues?: DeliveryQueues;
  /** Outbound sender for test sends (the egress client). */
  send?: Sender;
  /** The rate limiter behind POST /rate-limits/check (packages/ratelimit, started by the caller). */
  limiter: RateLimiter;
  /** Host name resolution for the address policy (tests inject one). */
  lookup?: HostLookup;
}

/** Builds the Express app without listening, so tests and main.ts share it. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gatehook_api_' });
  const requestDuration = new Histogram({
    name: 'gatehook_http_request_duration_seconds',
    help: 'API request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const decisions = new Counter({
    name: 'gatehook_rate_limit_decisions_total',
    help: 'Rate limit checks by outcome (allowed, denied) and source (memory, redis, fallback, fail_open, fail_closed, no_rules)',
    labelNames: ['outcome', 'source'],
    registers: [registry],
  });

  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      requestDuration.observe({ method: req.method, route: req.route?.path ?? 'unmatched', status: String(res.statusCode) }, ms / 1000);
      // The route template, never the raw URL: query strings may carry cursors, paths carry nothing secret.
      deps.logger.info({ method: req.method, route: req.route?.path ?? 'unmatched', status: res.statusCode, ms: Math.round(ms) }, 'request');
    });
    next();
  });
  const jsonTypes = ['application/json', 'application/*+json'];
  // Ingestion takes batches of up to 1000 events (5 MB); every other body is at most 1 MB.
  app.use('/audit-events', express.json({ limit: '5mb', type: jsonTypes }));
  app.use(express.json({ limit: '1mb', type: jsonTypes }));

  const routes: AnyRoute[] = [
    ...healthRoutes(deps.db, deps.redis),
    ...eventTypeRoutes(),
    ...auditEventRoutes({ db: deps.db, queues: deps.queues, logger: deps.logger }),
    ...deliveryRoutes({ db: deps.db, box: deps.box, queues: deps.queues, send: deps.send }),
    ...notificationRoutes(deps.db),
    ...webhookRoutes({
      db: deps.db,
      box: deps.box,
      egressAllow: parseCidrList(deps.config.EGRESS_ALLOW_CIDRS),
      rotationOverlapSeconds: deps.config.SECRET_ROTATION_OVERLAP_SECONDS,
      ...(deps.lookup ? { lookup: deps.lookup } : {}),
    }),
    ...rateLimitCheckRoutes({ limiter: deps.limiter, decisions }),
    ...rateLimitRuleRoutes({ db: deps.db, redis: deps.redis, redisPrefix: deps.config.REDIS_PREFIX, logger: deps.logger }),
  ];
  const openapi = buildOpenApi(routes, GATEHOOK_VERSION);
  app.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  app.get('/metrics', async (_req, res) => {
    res.set('content-type', registry.contentType).send(await registry.metrics());
  });

  const router = express.Router();
  mountRoutes(router, deps.db, routes);
  app.use(router);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
