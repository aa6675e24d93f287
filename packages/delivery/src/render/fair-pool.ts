import { performance } from 'node:perf_hooks';
import { Piscina } from 'piscina';
import { FairQueue, type Started } from './fair-queue';

/** A task that ran past the pool's hard deadline: its thread was terminated and replaced. */
export class RenderDeadlineError extends Error {
  override name = 'RenderDeadlineError';
}

/** The pool was closed before the task ran. */
export class RenderPoolClosedError extends Error {
  override name = 'RenderPoolClosedError';
}

export interface FairPoolOptions {
  /** The threads' entry file (piscina's filename); tasks name one of its exports. */
  filename: string;
  /** T, at least 2. */
  threads: number;
  /** Handed to every thread at start (piscina's workerData). */
  workerData?: unknown;
  /** A task still running this long after it started is stopped by terminating its thread. */
  hardDeadlineMs: number;
  /**
   * A thread that could not start or failed outside any task (piscina's 'error' event: out of file descriptors,
   * say). Without a listener that event would end the process; with none given, it becomes a process warning.
   */
  onError?: (error: Error) => void;
  /** FairQueue's budget and window (defaults ORG_CPU_BUDGET_MS per ORG_CPU_WINDOW_MS). */
  budgetMs?: number;
  windowMs?: number;
}

interface Job {
  name: string;
  task: unknown;
  /** Whether the hard deadline applies (not to a thread's warm-up, which is the time it takes to load its code). */
  deadline: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Worker threads (piscina) shared fairly between organisations. Tasks wait in this process's FairQueue, and the
 * pool hands piscina at most one task per thread, so the order in which work starts is the fair queue's, never
 * piscina's FIFO. Each task runs under a hard deadline: past it, piscina's abort terminates the thread (a
 * replacement starts), the task fails with RenderDeadlineError and the other threads go on.
 */
export class FairPool {
  private readonly piscina: Piscina;
  private readonly queue: FairQueue<Job>;
  private readonly hardDeadlineMs: number;
  private closing: Promise<void> | null = null;

  constructor(options: FairPoolOptions) {
    this.queue = new FairQueue<Job>({
      threads: options.threads,
      ...(options.budgetMs === undefined ? {} : { budgetMs: options.budgetMs }),
      ...(options.windowMs === undefined ? {} : { windowMs: options.windowMs }),
    });
    this.hardDeadlineMs = options.hardDeadlineMs;
    this.piscina = new Piscina({
      filename: options.filename,
      minThreads: options.threads,
      maxThreads: options.threads,
      concurrentTasksPerWorker: 1,
      workerData: options.workerData,
    });
    const onError =
      options.onError ?? ((error: Error) => process.emitWarning(error, { code: 'GATEHOOK_RENDER_THREAD' }));
    this.piscina.on('error', (error: unknown) => onError(error instanceof Error ? error : new Error(String(error))));
  }

  /** Number of threads (T). */
  get threads(): number {
    return this.queue.threads;
  }

  /** Runs `task` through the thread entry's export `name` when the fair queue gives `orgId` a thread. */
  run<R>(orgId: string, name: string, task: unknown, options: { deadline?: boolean } = {}): Promise<R> {
    if (this.closing) return Promise.reject(new RenderPoolClosedError('the render pool is closed'));
    return new Promise<R>((resolve, reject) => {
      this.queue.push(orgId, {
        name,
        task,
        deadline: options.deadline !== false,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.pump();
    });
  }

  /** Tasks running and waiting, per organisation (metrics, tests). */
  load(): ReturnType<FairQueue<Job>['load']> {
    return this.queue.load();
  }

  /** An organisation's render time in the current window (tests, metrics). */
  spentMs(orgId: string): number {
    return this.queue.spentMs(orgId, performance.now());
  }

  /** Refuses new tasks, fails the waiting ones, and stops the threads. Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const job of this.queue.drain())
        job.reject(new RenderPoolClosedError('the render pool closed before the task ran'));
      await this.piscina.destroy();
    })();
    return this.closing;
  }

  private pump(): void {
    for (let started = this.queue.next(performance.now()); started; started = this.queue.next(performance.now()))
      this.start(started);
  }

  private start(started: Started<Job>): void {
    const job = started.item;
    const abort = new AbortController();
    let overran = false;
    const deadline = job.deadline
      ? setTimeout(() => {
          overran = true;
          abort.abort();
        }, this.hardDeadlineMs)
      : undefined;
    this.piscina
      .run(job.task, { name: job.name, signal: abort.signal })
      .then(job.resolve, (error: unknown) =>
        job.reject(
          overran
            ? new RenderDeadlineError(
                `the render task ran past its hard deadline of ${this.hardDeadlineMs} ms; its thread was replaced`,
              )
            : error,
        ),
      )
      .finally(() => {
        clearTimeout(deadline);
        this.queue.finish(started, performance.now());
        if (!this.closing) this.pump();
      });
  }
}
