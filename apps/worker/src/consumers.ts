import { Worker, type Job, type Queue, type WorkerOptions } from 'bullmq';
import type { Logger } from '@gatehook/core/logger';

/** What a consumer does with a job (the processor BullMQ calls). */
export type Processor = (job: Job, token?: string) => Promise<unknown>;

export interface ConsumerOptions {
  /** The producer-side queue of the same name and prefix: the watchdog reads its waiting jobs there. */
  queue: Queue;
  processor: Processor;
  worker: WorkerOptions & { concurrency: number };
  logger: Logger;
  /** Called when the watchdog recreated the worker. */
  onRestart?: (queue: string) => void;
}

/** How long a replaced worker may take to finish its jobs before it is closed without waiting. */
const REPLACED_CLOSE_MS = 60_000;

/**
 * One BullMQ Worker on one queue (or shard), kept taking jobs: when jobs wait on the queue while this consumer has
 * free concurrency and has taken none of them for the watchdog's time, its blocking connection has stopped serving
 * it (a half-open socket, a node that was failed over under it): the Worker is replaced by a new one with fresh
 * connections, and the old one finishes its jobs in flight and closes.
 */
export class QueueConsumer {
  private worker: Worker;
  private active = 0;
  private lastTaken = Date.now();
  private waitingSince: number | null = null;
  private readonly replaced = new Set<Promise<void>>();
  private closing: Promise<void> | null = null;

  constructor(private readonly options: ConsumerOptions) {
    this.worker = this.create();
  }

  get name(): string {
    return `${this.options.queue.opts.prefix}:${this.options.queue.name}`;
  }

  /** The Worker now consuming (tests reach its connections through it). */
  get current(): Worker {
    return this.worker;
  }

  private create(): Worker {
    const { processor, logger } = this.options;
    const worker = new Worker(
      this.options.queue.name,
      async (job: Job, token?: string) => {
        this.active += 1;
        this.lastTaken = Date.now();
        try {
          return await processor(job, token);
        } finally {
          this.active -= 1;
        }
      },
      this.options.worker,
    );
    worker.on('failed', (job, error) =>
      logger.warn({ queue: this.name, job: job?.id, err: error.message }, 'job failed'),
    );
    worker.on('error', (error) => logger.warn({ queue: this.name, err: error.message }, 'worker error'));
    return worker;
  }

  /**
   * One watchdog look: `now` is the caller's clock, `stuckAfterMs` the time jobs may wait unserved. Rejects when
   * Redis cannot say how many jobs wait (the caller logs and counts it).
   */
  async check(stuckAfterMs: number, now = Date.now()): Promise<boolean> {
    if (this.closing) return false;
    const counts = await this.options.queue.getJobCounts('wait', 'prioritized');
    const waiting = (counts.wait ?? 0) + (counts.prioritized ?? 0);
    if (waiting === 0 || this.active >= this.options.worker.concurrency || this.worker.isPaused()) {
      this.waitingSince = null;
      return false;
    }
    this.waitingSince ??= now;
    if (now - Math.max(this.lastTaken, this.waitingSince) < stuckAfterMs) return false;
    this.restart(waiting);
    return true;
  }

  private restart(waiting: number): void {
    const old = this.worker;
    this.options.logger.warn(
      { queue: this.name, waiting, active: this.active },
      'queue worker took no job while jobs waited: recreating it',
    );
    this.worker = this.create();
    this.lastTaken = Date.now();
    this.waitingSince = null;
    this.options.onRestart?.(this.options.queue.name);
    const closed = retire(old, REPLACED_CLOSE_MS).finally(() => this.replaced.delete(closed));
    this.replaced.add(closed);
  }

  /** Lets in-flight jobs finish (or hands them back), then closes; safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([this.worker.close(), ...this.replaced]);
    })();
    return this.closing;
  }
}

/**
 * Closes a replaced worker: its blocking connection is dropped first (a command stuck on it would hold the close
 * forever), then its jobs in flight finish, for at most `ms`; past that it is left to BullMQ's stalled check.
 */
async function retire(worker: Worker, ms: number): Promise<void> {
  const blocking = (await worker.getBackend().blockingClient?.catch(() => undefined)) as
    { disconnect(): void } | undefined;
  blocking?.disconnect();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([worker.close().catch(() => undefined), late]);
  clearTimeout(timer);
}

/**
 * Runs every consumer's watchdog look every `stuckAfterMs / 2` (at most every 5 s). A look that fails (Redis
 * unreachable) is logged and counted, never swallowed.
 */
export function startWatchdog(
  consumers: () => readonly QueueConsumer[],
  options: { stuckAfterMs: number; logger: Logger; onError?: (queue: string) => void },
): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const tick = async () => {
    for (const consumer of consumers()) {
      await consumer.check(options.stuckAfterMs).catch((error: unknown) => {
        options.onError?.(consumer.name);
        options.logger.warn(
          { queue: consumer.name, err: (error as Error).message },
          'queue watchdog could not read the queue',
        );
      });
    }
  };
  const timer = setInterval(
    () => {
      running ??= tick().finally(() => (running = null));
    },
    Math.min(5_000, Math.max(100, Math.floor(options.stuckAfterMs / 2))),
  );
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
