import { LRUCache } from 'lru-cache';
import { Admission } from './admission';

/** Shortest time a delivery turned away by a full origin stays away. */
export const MIN_TURN_AWAY_MS = 250;
/** Longest: a delivery waiting on an origin that stays full looks again at least this often. */
export const MAX_TURN_AWAY_MS = 60_000;
/** Weight of the newest request in an origin's average time per request. */
const HOLD_SMOOTHING = 0.2;
/** Origins whose time per request is remembered (least recently used forgotten first). */
const REMEMBERED_ORIGINS = 10_000;

/**
 * Caps requests in flight per origin (DELIVERY_ORIGIN_CONCURRENCY), so one slow endpoint cannot take every
 * slot, and in all (DELIVERY_CONCURRENCY). A request past a cap waits in this process, in order, for a slot to be
 * freed, up to a deadline: a busy but healthy origin gets its next request the moment one finishes, with no
 * round trip through the queue or the database. One that stays full (a dead endpoint holding its slots for the
 * whole timeout) turns its deliveries away to come back when their turn can have come: the limiter keeps each
 * origin's average time per request and how many deliveries wait for it, so a backlog of thousands on a dead
 * endpoint comes back spread over up to a minute instead of all every few hundred milliseconds, and a delivery
 * that could not get a turn before its deadline is turned away at once instead of holding its run. Per process.
 */
export class OriginLimiter {
  private readonly origins = new Map<string, Admission>();
  private readonly all: Admission;
  /** Deliveries turned away by a full origin, with that origin: their next turn can be refused without I/O. */
  private readonly waiting = new Map<string, string>();
  /** How many of {@link waiting} wait for each origin. */
  private readonly waitingPerOrigin = new Map<string, number>();
  /** Each origin's average milliseconds per request (slot taken to slot given back). */
  private readonly holdMs = new LRUCache<string, number>({ max: REMEMBERED_ORIGINS });

  constructor(
    private readonly cap: number,
    private readonly maxWaiting = 100_000,
    totalCap = Number.POSITIVE_INFINITY,
  ) {
    this.all = new Admission(totalCap);
  }

  private slots(origin: string): Admission {
    let slots = this.origins.get(origin);
    if (!slots) {
      slots = new Admission(this.cap);
      this.origins.set(origin, slots);
    }
    return slots;
  }

  /** Whether an origin has no free slot now. */
  isFull(origin: string): boolean {
    return this.origins.get(origin)?.full ?? false;
  }

  /** Remembers that a delivery waits for its origin (bounded: past the cap the memory starts over). */
  noteWaiting(deliveryId: string, origin: string): void {
    if (this.waiting.size >= this.maxWaiting && !this.waiting.has(deliveryId)) {
      this.waiting.clear();
      this.waitingPerOrigin.clear();
    }
    this.doneWaiting(deliveryId);
    this.waiting.set(deliveryId, origin);
    this.waitingPerOrigin.set(origin, (this.waitingPerOrigin.get(origin) ?? 0) + 1);
  }

  /** The origin a delivery is known to wait for, if it was turned away before. */
  waitingFor(deliveryId: string): string | undefined {
    return this.waiting.get(deliveryId);
  }

  /** Forgets a delivery's wait once it gets a turn (or anything else happens to it). */
  doneWaiting(deliveryId: string): void {
    const origin = this.waiting.get(deliveryId);
    if (origin === undefined) return;
    this.waiting.delete(deliveryId);
    const left = (this.waitingPerOrigin.get(origin) ?? 1) - 1;
    if (left > 0) this.waitingPerOrigin.set(origin, left);
    else this.waitingPerOrigin.delete(origin);
  }

  /** Deliveries known to wait for `origin`: turned away, and waiting in this process for a slot. */
  waitersOf(origin: string): number {
    return (this.waitingPerOrigin.get(origin) ?? 0) + (this.origins.get(origin)?.waiting ?? 0);
  }

  /**
   * When a delivery turned away by `origin` should look again: once the deliveries ahead of it can have had their
   * turns at the origin's pace (its average time per request over its cap of slots), within
   * [MIN_TURN_AWAY_MS, MAX_TURN_AWAY_MS], spread so that waiters turned away together do not return together.
   */
  retryAt(origin: string, now = Date.now()): Date {
    const hold = this.holdMs.get(origin) ?? 0;
    const ahead = this.waitersOf(origin);
    const base = Math.min(MAX_TURN_AWAY_MS, Math.max(MIN_TURN_AWAY_MS, (ahead / this.cap) * hold));
    return new Date(now + base + Math.floor(Math.random() * Math.min(base, 1_000)));
  }

  /** Takes a slot of `origin` and one of the process's at once, or neither. */
  tryAcquire(origin: string): boolean {
    const slots = this.slots(origin);
    if (!slots.tryTake(1)) return false;
    if (this.all.tryTake(1)) return true;
    this.release(origin, { processSlot: false });
    return false;
  }

  /**
   * Waits for a slot of `origin`, then for one of the process's, until `deadline` (epoch ms). True when both are
   * held (give them back with {@link release}); false, holding nothing, when the deadline came first, or at once
   * when the origin's pace says the waiters already ahead will not all have had their turn by then.
   */
  async acquire(origin: string, deadline: number): Promise<boolean> {
    const slots = this.slots(origin);
    const hold = this.holdMs.get(origin);
    if (slots.full && hold !== undefined && ((slots.waiting + 1) / this.cap) * hold > deadline - Date.now()) {
      return false;
    }
    if (!(await slots.takeWithin(1, deadline - Date.now()))) return false;
    if (await this.all.takeWithin(1, deadline - Date.now())) return true;
    this.release(origin, { processSlot: false });
    return false;
  }

  /**
   * Gives back a slot of `origin` and (unless told otherwise) the process's slot taken with it; `heldMs`, the time
   * the request took, feeds the origin's pace.
   */
  release(origin: string, options: { processSlot?: boolean; heldMs?: number } = {}): void {
    if (options.heldMs !== undefined) {
      const previous = this.holdMs.get(origin);
      this.holdMs.set(origin, previous === undefined ? options.heldMs : previous + HOLD_SMOOTHING * (options.heldMs - previous));
    }
    const slots = this.origins.get(origin);
    if (slots) {
      slots.give(1);
      if (slots.idle) this.origins.delete(origin);
    }
    if (options.processSlot !== false) this.all.give(1);
  }
}
