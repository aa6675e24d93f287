/**
 * Bounds the deliveries one worker process holds between their lease and their record: a counting semaphore
 * taken by whole runs (a job's chunk, a fan-out's fresh deliveries), in order, and given back one delivery at a
 * time as each attempt is recorded (or as a delivery is turned away or cancelled: its lease goes back with its
 * run's other releases, in one statement once the run ends, but the delivery no longer costs this process work).
 *
 * Without it a busy process leases far more than it can send before the slot deadline (SLOT_WAIT_MS): 50
 * concurrent jobs of 200 deliveries are 10,000 leased deliveries for 50 requests in flight, and every delivery that
 * waits past the deadline is released, re-queued under a job of its own and leased again: three statements and
 * two jobs for nothing. With it, the excess waits where waiting is free: in the queue (the job is not taken) or in
 * the job before its lease. A run larger than the capacity is let in once nothing else holds a place, so it never
 * waits for ever. The origin limiter's slots are the same semaphore, one place per request.
 */
export class Admission {
  private held = 0;
  // First in, first out: a large run at the head is not overtaken by small ones for ever.
  private readonly waiters: { count: number; admit: () => void }[] = [];

  constructor(readonly capacity: number) {}

  /** Places taken now (deliveries leased or about to be, and not yet recorded). */
  get inUse(): number {
    return this.held;
  }

  /** Whether every place is taken. */
  get full(): boolean {
    return this.held >= this.capacity;
  }

  /** Whether no place is taken; nobody waits then either, since a run is let in whenever nothing is held. */
  get idle(): boolean {
    return this.held === 0;
  }

  /** Runs waiting for their places. */
  get waiting(): number {
    return this.waiters.length;
  }

  private fits(count: number): boolean {
    return this.held === 0 || this.held + count <= this.capacity;
  }

  /** Takes `count` places at once if they are free and nobody waits ahead; never waits. */
  tryTake(count: number): boolean {
    if (count <= 0) return true;
    if (this.waiters.length > 0 || !this.fits(count)) return false;
    this.held += count;
    return true;
  }

  /** Takes `count` places, waiting in order behind earlier callers until they are free. */
  take(count: number): Promise<void> {
    if (this.tryTake(count)) return Promise.resolve();
    return new Promise((admit) => this.waiters.push({ count, admit }));
  }

  /**
   * Takes `count` places, waiting in order for at most `ms`: true when taken, false (holding nothing, and no
   * longer in the line) when the time ran out first.
   */
  takeWithin(count: number, ms: number): Promise<boolean> {
    if (this.tryTake(count)) return Promise.resolve(true);
    if (ms <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = {
        count,
        admit: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        resolve(false);
        // It may have been the run that kept smaller ones behind it waiting.
        this.admitWaiters();
      }, ms);
      this.waiters.push(waiter);
    });
  }

  /** Gives back `count` places and lets in the waiters that now fit, oldest first. */
  give(count: number): void {
    if (count <= 0) return;
    this.held = Math.max(0, this.held - count);
    this.admitWaiters();
  }

  private admitWaiters(): void {
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.count)) {
      const next = this.waiters.shift()!;
      this.held += next.count;
      next.admit();
    }
  }
}
