// The budget of a rule (SPEC 2.5 burst rule, CONTRACT 8), in integers only:
//   C = max(burst, ceil(limit × min(60, W) / W))  calls per derived window
//   T = max(C × W / limit, min(60, W))             seconds, the derived window
// T is kept in whole milliseconds, rounded up, so the admitted rate C / T never exceeds limit / W. Every product
// stays below 2^53 (limit < 2^31, W <= 3600), so plain numbers are exact here.

/** What a rule admits: `calls` per derived window of `windowMs` milliseconds. */
export interface Budget {
  /** C: calls admitted per derived window. */
  calls: number;
  /** T in milliseconds (C × W / limit rounded up, never below min(60, W) seconds). */
  windowMs: number;
}

/** The rule fields the budget depends on. */
export interface BudgetInput {
  limit: number;
  windowSeconds: number;
  burst: number;
}

const ceilDiv = (a: number, b: number): number => Math.floor((a + b - 1) / b);

/** C and T of a rule. */
export function budgetOf({ limit, windowSeconds, burst }: BudgetInput): Budget {
  const floorSeconds = Math.min(60, windowSeconds);
  const calls = Math.max(burst, ceilDiv(limit * floorSeconds, windowSeconds));
  const windowMs = Math.max(ceilDiv(calls * windowSeconds * 1000, limit), floorSeconds * 1000);
  return { calls, windowMs };
}
