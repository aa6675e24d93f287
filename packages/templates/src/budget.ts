// The budget of the execution that is running, for the template functions: they are plain functions of their
// arguments, yet one call on a megabyte string can cost as much as a million steps. The executor installs its
// budget around a run (execution is synchronous, so one module-level slot suffices); functions check the
// deadline between chunks of their input and refuse inputs and results over the string cap. Called outside an
// execution they run under the default caps and no deadline.

/** Thrown inside a template function when the running execution's budget is spent; reported as a limit. */
export class LimitExceeded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LimitExceeded';
  }
}

/** Largest printf width or precision (Go allows 1e6: hundreds of `%999999d` build hundreds of MB). */
export const MAX_PRINTF_WIDTH = 10_000;

/** Characters an escaping function processes between two deadline checks. */
export const FUNCTION_CHUNK_CHARS = 16_384;

/** The string cap when no execution is running: the default output cap, 1 MiB. */
const DEFAULT_MAX_STRING = 1024 * 1024;

/** The time budget of one execution, started when the execution starts. */
export interface Timer {
  /** Whether the budget is spent. */
  passed(): boolean;
}

/** Starts a budget of `budgetMs` (ExecLimits.timer). */
export type StartTimer = (budgetMs: number) => Timer;

/** A budget of wall-clock time: the engine's default, for callers that give no clock of their own. */
export const wallClockTimer: StartTimer = (budgetMs) => {
  const deadline = Date.now() + budgetMs;
  return { passed: () => Date.now() > deadline };
};

interface Budget {
  readonly time: Timer;
  readonly maxDurationMs: number;
  /** Longest string a function may take or build: the execution's output cap. */
  readonly maxString: number;
}

let active: Budget | undefined;

/** Runs `fn` with `budget` installed for the template functions it calls. */
export function withBudget<T>(budget: Budget, fn: () => T): T {
  const previous = active;
  active = budget;
  try {
    return fn();
  } finally {
    active = previous;
  }
}

/** Throws LimitExceeded when the running execution's time budget is spent. */
export function checkDeadline(): void {
  if (active !== undefined && active.time.passed()) {
    throw new LimitExceeded(`execution stopped after ${active.maxDurationMs} ms`);
  }
}

/** The longest string a function may take or build now. */
export function maxString(): number {
  return active?.maxString ?? DEFAULT_MAX_STRING;
}

/** Refuses a function's input or result longer than the string cap; the message gives sizes, never content. */
export function checkSize(what: 'input' | 'result', length: number): void {
  const max = maxString();
  if (length > max) throw new LimitExceeded(`${what} of ${length} characters is larger than ${max}`);
}

/**
 * `escape` applied to `s` in chunks of FUNCTION_CHUNK_CHARS (never splitting a surrogate pair), with the
 * deadline checked and the result's size capped between chunks. `escape` must work character by character.
 */
export function escapeInChunks(s: string, escape: (chunk: string) => string): string {
  checkSize('input', s.length);
  if (s.length <= FUNCTION_CHUNK_CHARS) return escape(s);
  const max = maxString();
  let out = '';
  for (let start = 0; start < s.length;) {
    checkDeadline();
    let end = Math.min(start + FUNCTION_CHUNK_CHARS, s.length);
    const last = s.charCodeAt(end - 1);
    if (end < s.length && last >= 0xd800 && last <= 0xdbff) end--;
    out += escape(s.slice(start, end));
    if (out.length > max) throw new LimitExceeded(`result is larger than ${max} characters`);
    start = end;
  }
  return out;
}
