import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { InvalidationBus } from '@gatehook/cache/invalidation';
import { SecretBox } from '@gatehook/core/encryption';
import { connectRedis, redisTarget } from '@gatehook/core/redis';
import { runService, type RunningService, closeRedis } from '@gatehook/core/service';
import { bootService } from '@gatehook/core/service-boot';
import { createDb, warmPool } from '@gatehook/db/client';
import { DeliveryQueues } from '@gatehook/delivery';
import { RenderPool } from '@gatehook/delivery/render/pool';
import { egressClientFromConfig } from '@gatehook/egress/from-config';
import { createApi } from './app';
import { startGrpcServer, type RunningGrpcServer } from './grpc/server';
import { warmUpGrpc } from './grpc/warm-up';
import { startApiKeyCache } from './http/api-keys';
import { startConfiguredRateLimiter, warmCheckQueries } from './services/rate-limit-check';
import { loadConfig } from './env';

/** How long an idle keep-alive connection stays open (above the 60 s idle timeout of common load balancers). */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

async function main(): Promise<RunningService> {
  const { config, logger, tracing } = await bootService('gatehook-api', loadConfig);

  const db = createDb(config.DATABASE_URL);
  const target = redisTarget(config);
  const redis = connectRedis(target, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
  redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis connection error'));
  const producer = connectRedis(target, { maxRetriesPerRequest: 1 });
  producer.on('error', () => undefined);
  const queues = new DeliveryQueues(producer, config.REDIS_PREFIX, { shards: config.DELIVERY_QUEUE_SHARDS });
  const egress = egressClientFromConfig(config);
  // One subscriber connection for every cache of the process (API keys, rate limit rules).
  const subscriber = connectRedis(target, { maxRetriesPerRequest: null });
  subscriber.on('error', () => undefined);
  const bus = new InvalidationBus(subscriber, config.REDIS_PREFIX);
  const apiKeys = await startApiKeyCache(config, db, bus);
  const rateLimiting = await startConfiguredRateLimiter(config, db, { queues, logger, bus });
  const render = new RenderPool({
    encryptionKey: config.GATEHOOK_ENCRYPTION_KEY,
    threads: config.API_RENDER_THREADS,
    onError: (error) => logger.error({ err: error.message }, 'a render thread failed outside a task'),
  });
  // The render threads load their code and the database connections open and warm before the first request.
  const [, database] = await Promise.all([render.warm(), warmPool(db)]);
  if (!database.warmed)
    logger.warn('not every database connection could be opened and warmed before taking requests; they open on demand');
  // The check's key and rule reads have their query plans compiled before the first check needs them.
  if (!(await warmCheckQueries(db))) logger.warn('the rate limit check reads could not be run before taking requests');
  const api = createApi({
    config,
    db,
    redis,
    queues,
    logger,
    apiKeys,
    render,
    limiter: rateLimiting.limiter,
    box: new SecretBox(config.GATEHOOK_ENCRYPTION_KEY),
    send: (request) => egress.send(request),
  });

  // Envoy's rate limit service over the same check (CONTRACT 19), listening before /healthz can answer.
  let grpc: RunningGrpcServer | null = null;
  if (config.GRPC_PORT !== 0) {
    const tls = config.GRPC_TLS_CERT_FILE
      ? { certChain: readFileSync(config.GRPC_TLS_CERT_FILE), privateKey: readFileSync(config.GRPC_TLS_KEY_FILE) }
      : undefined;
    // The check path runs a few thousand private calls first, so that gateways never meet it unoptimised.
    const warmed = await warmUpGrpc({ logger, store: rateLimiting.limiter.store });
    logger.info(warmed, 'grpc check path warmed');
    grpc = await startGrpcServer({ port: config.GRPC_PORT, tls, keys: apiKeys, check: api.check, logger });
    logger.info({ port: grpc.port, tls: tls !== undefined }, 'grpc listening');
  }

  const server = createServer(api.listener);
  // Idle keep-alive connections are kept longer than load balancers and gateway clients keep theirs (60 s is
  // common), so a client never sends a request on a connection the API is closing at that instant (Node's 5 s
  // default loses that race under load: "socket hang up" on the client). Headers must still arrive in time.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
  server.listen(config.PORT);
  await once(server, 'listening');
  logger.info({ port: config.PORT }, 'api listening');

  return {
    logger,
    async stop() {
      // No new connections; in-flight requests finish before the connections close.
      server.close();
      // A connection whose request was in flight stays open after its answer for the keep-alive timeout: close
      // each one as soon as it is idle, so shutdown waits for requests, not for idle connections.
      server.closeIdleConnections();
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      await Promise.all([once(server, 'close').catch(() => undefined), grpc?.close()]);
      clearInterval(idle);
      await Promise.allSettled([queues.close(), egress.close(), rateLimiting.close(), render.close()]);
      subscriber.disconnect();
      await Promise.allSettled([db.$disconnect(), closeRedis(redis), closeRedis(producer)]);
      await tracing.stop();
    },
  };
}

runService(main);
