// A time budget counted in the CPU time of the thread that spends it. Templates and conditions run on render threads
// of a worker shared with other processes and threads; a budget of wall-clock time fails a valid template or
// condition whenever the machine is busy (a render of about 0.6 s of CPU went over its 1 s budget on a loaded 2-core
// machine), and a failed render fails its delivery for good, a failed condition skips its event. So on a worker
// thread the budget is the thread's own CPU time where the OS tells it (Linux: /proc/thread-self/schedstat,
// nanoseconds this thread has run). On a main thread (the API's or a gateway's event loop, where a rate limit rule's
// condition or the save-time render runs) the budget stays wall-clock time: what matters there is how long the
// other requests of that loop wait.
//
// The wall clock is read as before; the thread's CPU time (about 20 µs a reading) only when a budget starts with no
// reading younger than BASELINE_MAX_AGE_MS, and when the wall time passes a budget, which then moves its deadline on
// by what is left. A budget counts the CPU time since that reading, so it may come out up to BASELINE_MAX_AGE_MS
// short, never long. A thread that the machine starves is still stopped at WALL_CAP_FACTOR times its budget.

import { readFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

/** Wall-clock time a budget may take at most, as a multiple of its budget of CPU time. */
export const WALL_CAP_FACTOR = 5;

/** How old a reading of the thread's CPU time may be to start a budget from (ms). */
export const BASELINE_MAX_AGE_MS = 5;

/** The least a deadline moves on after a reading of the thread's CPU time (so readings stay rare). */
const MIN_EXTENSION_MS = 2;

/** CPU time (ms) this thread has run so far, or undefined where the OS does not say. */
export function threadCpuMs(): number | undefined {
  try {
    const nanoseconds = Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ', 1)[0]);
    return Number.isFinite(nanoseconds) ? nanoseconds / 1e6 : undefined;
  } catch {
    return undefined;
  }
}

/** A budget started when it was made; `passed()` says whether it is spent. */
export interface Deadline {
  passed(): boolean;
}

export interface ThreadClock {
  /** A budget of `budgetMs` of this thread's CPU time, and at most WALL_CAP_FACTOR × `budgetMs` of wall-clock time. */
  deadline(budgetMs: number): Deadline;
  /** Whether budgets count CPU time (false: wall-clock time, where the OS gives no thread clock). */
  readonly counted: boolean;
}

/**
 * The clocks a thread's budgets read: `wall` (ms, monotonic) and `cpu`, the thread's CPU time in ms or undefined
 * where there is none. Tests give their own; everything else uses {@link threadClock}.
 */
export function createThreadClock(wall: () => number, cpu: () => number | undefined): ThreadClock {
  const counted = cpu() !== undefined;
  let baseline = { wall: -Infinity, cpu: 0 };
  const readCpu = (now: number): number => {
    baseline = { wall: now, cpu: cpu() ?? 0 };
    return baseline.cpu;
  };
  return {
    counted,
    deadline(budgetMs) {
      const started = wall();
      if (!counted) {
        const at = started + budgetMs;
        return { passed: () => wall() > at };
      }
      const cpuStarted = started - baseline.wall <= BASELINE_MAX_AGE_MS ? baseline.cpu : readCpu(started);
      const wallCap = started + budgetMs * WALL_CAP_FACTOR;
      // CPU time never runs ahead of wall-clock time: until `next` the budget cannot be spent.
      let next = started + budgetMs;
      let spent = false;
      const passed = (): boolean => {
        if (spent) return true;
        const now = wall();
        if (now <= next) return false;
        const remaining = now > wallCap ? 0 : budgetMs - (readCpu(now) - cpuStarted);
        spent = remaining <= 0;
        if (!spent) next = Math.min(now + Math.max(remaining, MIN_EXTENSION_MS), wallCap);
        return spent;
      };
      return { passed };
    },
  };
}

/**
 * This thread's clock: CPU time on a worker thread (each loads its own copy of this module, so its own baseline),
 * wall-clock time on the main thread.
 */
export const threadClock: ThreadClock = createThreadClock(
  () => performance.now(),
  isMainThread ? () => undefined : threadCpuMs,
);
