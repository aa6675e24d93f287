import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import type { Config } from '@gatehook/core/config';
import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import { GATEHOOK_VERSION } from '@gatehook/core/version';
import type { Db } from '@gatehook/db/client';
import { parseCidrList, type HostLookup } from '@gatehook/egress/address-policy';
import { errorHandler, notFoundHandler } from './http/errors';
import { buildOpenApi } from './http/openapi';
import { mountRoutes, type AnyRoute } from './http/route';
import { eventTypeRoutes } from './routes/event-types';
import { healthRoutes } from './routes/health';
import { webhookRoutes } from './routes/webhooks';

export interface AppDeps {
  config: Config;
  db: Db;
  redis: Redis;
  box: SecretBox;
  logger: Logger;
  /** Host name resolution for the address policy (tests inject one). */
  lookup?: HostLookup;
}

/** Builds the Express app without listening, so tests and main.ts share it. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // The route template, never the raw URL: query strings may carry cursors, paths carry nothing secret.
      deps.logger.info({ method: req.method, route: req.route?.path ?? 'unmatched', status: res.statusCode, ms: Math.round(ms) }, 'request');
    });
    next();
  });
  app.use(express.json({ limit: '1mb', type: ['application/json', 'application/*+json'] }));

  const routes: AnyRoute[] = [
    ...healthRoutes(deps.db, deps.redis),
    ...eventTypeRoutes(),
    ...webhookRoutes({
      db: deps.db,
      box: deps.box,
      egressAllow: parseCidrList(deps.config.EGRESS_ALLOW_CIDRS),
      rotationOverlapSeconds: deps.config.SECRET_ROTATION_OVERLAP_SECONDS,
      ...(deps.lookup ? { lookup: deps.lookup } : {}),
    }),
  ];
  const openapi = buildOpenApi(routes, GATEHOOK_VERSION);
  app.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });

  const router = express.Router();
  mountRoutes(router, deps.db, routes);
  app.use(router);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
