import type { Config } from '@gatehook/core/config';
import { SecretBox } from '@gatehook/core/encryption';
import { createLogger } from '@gatehook/core/logger';
import { createDb } from '@gatehook/db/client';
import { startWorker, type Worker } from '@gatehook/worker/worker';

/** The real worker engine in this process, on the test's Redis prefix. */
export async function startTestEngine(
  config: Config,
  options: { reconcilerGrace?: { eventsMs: number; deliveriesMs: number }; logLines?: string[] } = {},
): Promise<Worker & { stop(): Promise<void> }> {
  const db = createDb(config.DATABASE_URL, { poolSize: 6 });
  const engine = await startWorker({
    config,
    db,
    box: new SecretBox(config.GATEHOOK_ENCRYPTION_KEY),
    logger: options.logLines
      ? createLogger({
          name: 'test-worker',
          level: 'trace',
          destination: { write: (line: string) => void options.logLines!.push(line) },
        })
      : createLogger({ name: 'test-worker', level: 'silent' }),
    ...(options.reconcilerGrace ? { reconcilerGrace: options.reconcilerGrace } : {}),
  });
  return {
    ...engine,
    async stop() {
      await engine.close();
      await db.$disconnect();
    },
  };
}
