import { once } from 'node:events';
import { Redis } from 'ioredis';
import { SecretBox } from '@gatehook/core/encryption';
import { createLogger } from '@gatehook/core/logger';
import { createDb } from '@gatehook/db/client';
import { loadConfig } from './env';
import { startEngine } from './engine';
import { createWorkerServer } from './http';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ name: 'gatehook-worker', level: config.LOG_LEVEL });
  for (const warning of config.startupWarnings) logger.warn(warning);

  const db = createDb(config.DATABASE_URL);
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
  redis.on('error', (error) => logger.warn({ err: error.message }, 'redis connection error'));

  const engine = await startEngine({ config, db, box: new SecretBox(config.GATEHOOK_ENCRYPTION_KEY), logger });
  const server = createWorkerServer({
    checks: { postgres: () => db.$queryRaw`SELECT 1`, redis: () => redis.ping() },
    metrics: engine.metrics.registry,
  });
  server.listen(config.WORKER_PORT);
  await once(server, 'listening');
  logger.info({ port: config.WORKER_PORT, prefix: config.REDIS_PREFIX }, 'worker started');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping worker');
    server.close();
    // Workers finish their in-flight jobs (or hand them back) before connections close.
    await engine.close();
    await Promise.allSettled([db.$disconnect(), redis.quit()]);
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error && error.name === 'ConfigError' ? error.message : error);
  process.exit(1);
});
