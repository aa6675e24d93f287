// Check-and-consume over every counter a call touches (CONTRACT 8), as one pure function. The memory store runs
// it directly; lua/check-and-consume.lua is the same algorithm inside Redis, and a differential test keeps the
// two in step.
//
// A counter's window starts at its first admitted call and admits C calls; the first call at or after start + T
// opens a new window. When any deny counter lacks the budget for `cost`, the call is denied and no counter is
// consumed. Otherwise every counter with budget is consumed; a log_only counter without it is marked exceeded and
// consumes nothing. The first exceeded check of a counter in a window is flagged once (`firstExceeded`), for the
// rate_limit.exceeded audit event; remembering that flag is not consumption, so it is stored even on a denial.

/** A counter's state: the window's start (ms), calls used in it, and whether its exceedance was reported. */
export interface CounterState {
  start: number;
  used: number;
  reported: boolean;
}

/** What one matching rule allows, for the counter of this call's key. */
export interface CounterLimit {
  /** C */
  calls: number;
  /** T in ms */
  windowMs: number;
  /** A deny rule stops the call when exhausted; a log_only rule only reports. */
  deny: boolean;
}

/** One counter's part of a decision. */
export interface CounterOutcome {
  /** Budget left after this call (nothing is consumed on a denial). */
  remaining: number;
  /** When the counter's current window ends (ms); for a counter with no window yet, now + T. */
  resetAt: number;
  exceeded: boolean;
  /** This is the first check in the window that found the counter exceeded. */
  firstExceeded: boolean;
}

export interface ConsumeResult {
  allowed: boolean;
  outcomes: CounterOutcome[];
  /** The state to store per counter, or null to leave it as it was. */
  writes: (CounterState | null)[];
}

/** Decides a call of `cost` against the counters' current states at `now` (ms). */
export function checkAndConsume(
  states: readonly (CounterState | undefined)[],
  limits: readonly CounterLimit[],
  cost: number,
  now: number,
): ConsumeResult {
  // Plain loops and no closures: this runs on every check of a gateway.
  const n = limits.length;
  const live: CounterState[] = new Array(n);
  const exceeded: boolean[] = new Array(n);
  let allowed = true;
  for (let i = 0; i < n; i += 1) {
    const limit = limits[i]!;
    const state = states[i];
    const current = state && now < state.start + limit.windowMs ? state : { start: now, used: 0, reported: false };
    live[i] = current;
    exceeded[i] = cost > limit.calls - current.used;
    if (exceeded[i] && limit.deny) allowed = false;
  }

  const outcomes: CounterOutcome[] = new Array(n);
  const writes: (CounterState | null)[] = new Array(n);
  for (let i = 0; i < n; i += 1) {
    const limit = limits[i]!;
    const state = live[i]!;
    let write: CounterState | null = null;
    let firstExceeded = false;
    if (exceeded[i]) {
      if (!state.reported) {
        firstExceeded = true;
        write = { start: state.start, used: state.used, reported: true };
      }
    } else if (allowed) {
      write = { start: state.start, used: state.used + cost, reported: state.reported };
    }
    const after = write ?? state;
    // A rule edited down to a smaller C can leave more used than it now admits: nothing is left, not less.
    outcomes[i] = {
      remaining: Math.max(0, limit.calls - after.used),
      resetAt: after.start + limit.windowMs,
      exceeded: exceeded[i]!,
      firstExceeded,
    };
    writes[i] = write;
  }
  return { allowed, outcomes, writes };
}
