import { once } from 'node:events';
import { SecretBox } from '@gatehook/core/encryption';
import { runService, type RunningService } from '@gatehook/core/service';
import { bootService } from '@gatehook/core/service-boot';
import { createDb, warmPool } from '@gatehook/db/client';
import { loadConfig } from './env';
import { startWorker } from './worker';
import { createWorkerServer } from './http';

async function main(): Promise<RunningService> {
  const { config, logger, tracing } = await bootService('gatehook-worker', loadConfig);

  const db = createDb(config.DATABASE_URL);
  // Its connections open and warm before the engine takes its first job.
  if (!(await warmPool(db)).warmed)
    logger.warn('not every database connection could be opened and warmed before taking jobs; they open on demand');

  const worker = await startWorker({ config, db, box: new SecretBox(config.GATEHOOK_ENCRYPTION_KEY), logger });
  const server = createWorkerServer({
    checks: { postgres: () => db.$queryRaw`SELECT 1`, redis: () => worker.roundTrip() },
    metrics: worker.metrics.registry,
    metricsToken: config.METRICS_TOKEN,
  });
  server.listen(config.WORKER_PORT);
  await once(server, 'listening');
  logger.info({ port: config.WORKER_PORT, prefix: config.REDIS_PREFIX }, 'worker started');

  return {
    logger,
    async stop() {
      server.close();
      // Workers finish their in-flight jobs (or hand them back) before connections close.
      await worker.close();
      await db.$disconnect();
      await tracing.stop();
    },
  };
}

runService(main);
