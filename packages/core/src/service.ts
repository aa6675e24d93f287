import type { Logger } from './logger';

/**
 * Node flags every API and worker process runs with (pnpm start, start:api, start:worker, the apps' own start
 * scripts, the Docker images, and the processes tests and benchmarks start):
 * - `--max-semi-space-size=32`: V8's young generation of 16 MB per semi-space fills every few milliseconds on the
 *   hot path (a fan-out of 1,000 events reads, renders and packs a few MB of short-lived strings and rows), and each
 *   scavenge copies whatever is still alive; 32 MB halves the scavenges and what survives them, for at most 32 MB
 *   more memory per process;
 * - `--always-sparkplug`: every function is compiled to V8's baseline machine code on its first call instead of
 *   being interpreted until it has run often enough. A process that has just started meets its first traffic with
 *   none of its hot path compiled, and on a small machine the interpreter's slowness is the first second's latency
 *   (a fresh stack's first figure 3 second: p50 about half); the price is memory: the worker's resident set was
 *   some 25 MB larger after a figure 3.
 * bench/HISTORY.md has what each saved.
 */
export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=32', '--always-sparkplug'] as const;

/** What a started service hands back: its logger and how to stop it gracefully. */
export interface RunningService {
  logger: Logger;
  stop(signal: NodeJS.Signals): Promise<void>;
}

/**
 * Runs a process's service: starts it, stops it once on the first SIGTERM or SIGINT and exits, and exits 1 with a
 * readable message when start-up fails (a configuration error prints as is; nothing secret is loaded before it).
 */
export function runService(start: () => Promise<RunningService>): void {
  start().then(
    ({ logger, stop }) => {
      let stopping = false;
      const onSignal = (signal: NodeJS.Signals) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'stopping');
        stop(signal).then(
          () => {
            logger.info('stopped');
            process.exit(0);
          },
          (error: unknown) => {
            logger.error({ err: error }, 'stopping failed');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
    },
    (error: unknown) => {
      console.error(error instanceof Error && error.name === 'ConfigError' ? error.message : error);
      process.exit(1);
    },
  );
}

/** The part of an ioredis connection that closing needs. */
interface Closable {
  quit(): Promise<unknown>;
  disconnect(): void;
}

/**
 * Closes a Redis connection gracefully (QUIT lets pending replies arrive), but never waits on a Redis that is
 * down: a QUIT queued on a reconnecting client would wait forever, so after `ms` the socket is simply dropped.
 */
export async function closeRedis(client: Closable, ms = 1000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([client.quit().catch(() => undefined), gaveUp]);
  clearTimeout(timer);
  client.disconnect();
}
