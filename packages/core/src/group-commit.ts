/** Most items a flush carries, most flushes in flight, and the least time between the starts of two flushes. */
export interface GroupCommitOptions<I = unknown> {
  /** Most items a flush carries; with `weigh`, most weight (an item heavier than that still goes, alone). */
  maxBatch: number;
  maxConcurrent: number;
  minIntervalMs?: number;
  /** An item's weight against `maxBatch` (default: 1 each). */
  weigh?: (item: I) => number;
  /** Called whenever the last flush in flight ends with nothing waiting. */
  onIdle?: () => void;
}

/** Weight of the newest gap between two submits in their running average. */
const GAP_SMOOTHING = 0.2;

/**
 * Group commit: work submitted while a flush is running waits for the next flush, which takes it all in one
 * statement. Under no load an item is flushed at once (no linger); under load the batch grows by itself, so
 * round trips per item fall as concurrency rises. `flush` answers one result per item, in order.
 */
export class GroupCommit<I, R> {
  private queue: { item: I; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private running = 0;
  private lastStart = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;
  private lastSubmit: number | undefined;
  /** Running average of the gaps between submits (ms); undefined until two have come. */
  private averageGap: number | undefined;

  /**
   * `minIntervalMs` (default 0): a flush starts at least this long after the previous one started, so that under a
   * steady stream each flush carries what arrived meanwhile. It holds only while items come more often than once
   * per interval on average: an item arriving after a quiet spell, or in a stream too thin to give it company within
   * the interval (two clients' items a few ms apart, a tenth of a second between pairs), goes at once, since waiting
   * would gather nothing.
   */
  constructor(
    private readonly flush: (items: I[]) => Promise<R[]>,
    private readonly options: GroupCommitOptions<I>,
  ) {}

  /** A group commit whose flush has no result per item: each submit resolves once the flush that carried it did. */
  static withoutResults<I>(
    flush: (items: I[]) => Promise<unknown>,
    options: GroupCommitOptions<I>,
  ): GroupCommit<I, void> {
    return new GroupCommit<I, void>(async (items) => {
      await flush(items);
      return items.map(() => undefined);
    }, options);
  }

  /** Queues an item; resolves with its result once the flush that carried it completed. */
  submit(item: I): Promise<R> {
    const now = performance.now();
    if (this.lastSubmit !== undefined) {
      const gap = now - this.lastSubmit;
      this.averageGap = this.averageGap === undefined ? gap : this.averageGap + GAP_SMOOTHING * (gap - this.averageGap);
    }
    this.lastSubmit = now;
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    while (this.running < this.options.maxConcurrent && this.queue.length > 0) {
      const interval = this.options.minIntervalMs ?? 0;
      const wait =
        this.averageGap !== undefined && this.averageGap < interval ? this.lastStart + interval - performance.now() : 0;
      if (wait > 0) {
        this.timer ??= setTimeout(() => {
          this.timer = null;
          this.kick();
        }, wait);
        return;
      }
      this.lastStart = performance.now();
      const batch = this.queue.splice(0, this.batchLength());
      this.running += 1;
      this.flush(batch.map((b) => b.item))
        .then(
          (results) => batch.forEach((b, i) => b.resolve(results[i] as R)),
          (error: unknown) => batch.forEach((b) => b.reject(error)),
        )
        .finally(() => {
          this.running -= 1;
          this.kick();
          if (this.running === 0 && this.queue.length === 0) this.options.onIdle?.();
        });
    }
  }

  /** How many of the waiting items the next flush takes: up to `maxBatch` of them, or of their weight. */
  private batchLength(): number {
    const { weigh, maxBatch } = this.options;
    if (weigh === undefined) return maxBatch;
    let weight = 0;
    let n = 0;
    for (const { item } of this.queue) {
      weight += weigh(item);
      if (n > 0 && weight > maxBatch) break;
      n += 1;
    }
    return n;
  }

  /** Items waiting for a flush (for metrics and tests). */
  get pending(): number {
    return this.queue.length;
  }
}
