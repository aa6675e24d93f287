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
 * waits for ever.
 *
 * Places are shared fairly between the runs' keys (organisations): when places come back, the key holding the
 * fewest goes next (the oldest of its runs), so one organisation's burst of runs waiting for room does not keep
 * another's out; the run chosen is not overtaken while it waits for enough places, so a large run never starves.
 */
export class Admission {
  private held = 0;
  private sequence = 0;
  /** Places held per key. */
  private readonly heldBy = new Map<string, number>();
  /** Runs waiting, per key, oldest first. */
  private readonly waiters = new Map<string, Waiter[]>();
  private waiterCount = 0;

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
    return this.waiterCount;
  }

  /** Places held by the runs of `key`. */
  heldOf(key: string): number {
    return this.heldBy.get(key) ?? 0;
  }

  private fits(count: number): boolean {
    return this.held === 0 || this.held + count <= this.capacity;
  }

  private hold(count: number, key: string): void {
    this.held += count;
    this.heldBy.set(key, (this.heldBy.get(key) ?? 0) + count);
  }

  /** Takes `count` places at once if they are free and nobody waits; never waits. */
  tryTake(count: number, key = ''): boolean {
    if (count <= 0) return true;
    if (this.waiterCount > 0 || !this.fits(count)) return false;
    this.hold(count, key);
    return true;
  }

  /** Takes `count` places for `key`, waiting behind earlier callers (fairly between keys) until they are free. */
  take(count: number, key = ''): Promise<void> {
    if (this.tryTake(count, key)) return Promise.resolve();
    return new Promise((admit) => {
      this.enqueue({ count, key, seq: 0, admit });
      // Others wait, but this key may hold fewer places than theirs and fit now.
      this.admitWaiters();
    });
  }

  /**
   * Takes `count` places for `key`, waiting (fairly between keys) for at most `ms`: true when taken, false (holding
   * nothing, and no longer in the line) when the time ran out first.
   */
  takeWithin(count: number, ms: number, key = ''): Promise<boolean> {
    if (this.tryTake(count, key)) return Promise.resolve(true);
    if (ms <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        count,
        key,
        seq: 0,
        admit: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.dequeue(waiter);
        resolve(false);
        // It may have been the run that kept smaller ones behind it waiting.
        this.admitWaiters();
      }, ms);
      this.enqueue(waiter);
      this.admitWaiters();
    });
  }

  /** Gives back `count` places of `key` and lets in the waiters that now fit. */
  give(count: number, key = ''): void {
    if (count <= 0) return;
    this.held = Math.max(0, this.held - count);
    const left = (this.heldBy.get(key) ?? 0) - count;
    if (left > 0) this.heldBy.set(key, left);
    else this.heldBy.delete(key);
    this.admitWaiters();
  }

  private enqueue(waiter: Waiter): void {
    this.sequence += 1;
    waiter.seq = this.sequence;
    const line = this.waiters.get(waiter.key);
    if (line) line.push(waiter);
    else this.waiters.set(waiter.key, [waiter]);
    this.waiterCount += 1;
  }

  private dequeue(waiter: Waiter): void {
    const line = this.waiters.get(waiter.key);
    if (!line) return;
    const index = line.indexOf(waiter);
    if (index < 0) return;
    line.splice(index, 1);
    if (line.length === 0) this.waiters.delete(waiter.key);
    this.waiterCount -= 1;
  }

  /** The run that goes next: the oldest of the key holding the fewest places (the oldest run between equals). */
  private next(): Waiter | undefined {
    let chosen: Waiter | undefined;
    let chosenHeld = 0;
    for (const [key, line] of this.waiters) {
      const head = line[0]!;
      const held = this.heldBy.get(key) ?? 0;
      if (!chosen || held < chosenHeld || (held === chosenHeld && head.seq < chosen.seq)) {
        chosen = head;
        chosenHeld = held;
      }
    }
    return chosen;
  }

  private admitWaiters(): void {
    for (let next = this.next(); next && this.fits(next.count); next = this.next()) {
      this.dequeue(next);
      this.hold(next.count, next.key);
      next.admit();
    }
  }
}

interface Waiter {
  count: number;
  key: string;
  seq: number;
  admit: () => void;
}
