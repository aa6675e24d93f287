// The budget of one condition evaluation. cel-js has parse-time limits but no evaluation budget, and a condition
// is evaluated for every event of every subscribed webhook on the shared worker: `list.map(x, s + s)` over a big
// event builds gigabytes, nested `exists` over long lists is quadratic. Every node of a compiled program is
// instrumented: each evaluation is a step, and every string or list a node yields is charged by its length
// (reading a big field costs as much as scanning it; building one costs as much as its size). Past a bound the
// evaluation stops with an error that the caller reports as {ok: false}; it never throws out, never hangs.

import type { ASTNode } from '@marcbachmann/cel-js';
import { threadClock, type Deadline } from '@gatehook/core/cpu-deadline';

/** Node evaluations per condition and event. */
export const MAX_EVALUATION_STEPS = 200_000;

/** String characters and list elements that nodes may yield per evaluation (about 16 MB of UTF-16 at most). */
export const MAX_EVALUATION_SIZE = 8_000_000;

/**
 * Time per evaluation: the thread's CPU time on a worker thread where the OS tells it, else wall-clock time
 * (core/cpu-deadline.ts).
 */
export const MAX_EVALUATION_MS = 50;

/** Steps, or yielded size in units of 64k, between two readings of the clock. */
const CLOCK_EVERY = 256;

class BudgetExceeded extends Error {}

interface Budget {
  steps: number;
  size: number;
  sinceClock: number;
  readonly time: Deadline;
  exceeded: string | null;
  /** Thrown again by every later step: comprehensions may swallow it and go on, and a stack per throw is dear. */
  error: BudgetExceeded | null;
}

let active: Budget | null = null;

function exceed(budget: Budget, message: string): never {
  budget.exceeded ??= message;
  budget.error ??= new BudgetExceeded(budget.exceeded);
  throw budget.error;
}

function charge(budget: Budget, value: unknown): void {
  let size = 0;
  if (typeof value === 'string' || Array.isArray(value)) size = value.length;
  if (size === 0) return;
  budget.size += size;
  if (budget.size > MAX_EVALUATION_SIZE) {
    exceed(
      budget,
      `condition exceeded its budget: it handled more than ${MAX_EVALUATION_SIZE} characters or list elements`,
    );
  }
  budget.sinceClock += size >>> 16;
}

function step(budget: Budget): void {
  if (budget.error !== null) throw budget.error;
  if (++budget.steps > MAX_EVALUATION_STEPS) {
    exceed(budget, `condition exceeded its budget of ${MAX_EVALUATION_STEPS} evaluation steps`);
  }
  if (++budget.sinceClock >= CLOCK_EVERY) {
    budget.sinceClock = 0;
    if (budget.time.passed()) exceed(budget, `condition exceeded its budget of ${MAX_EVALUATION_MS} ms`);
  }
}

type Evaluate = (this: ASTNode, ev: unknown, ast: ASTNode, ctx: unknown) => unknown;

function isNode(value: unknown): value is ASTNode {
  return typeof value === 'object' && value !== null && typeof (value as { op?: unknown }).op === 'string';
}

/**
 * Wraps the evaluation of every node of a parsed (and checked) program so that it counts against the running
 * budget. cel-js resolves a node's evaluate function on its first call and stores it on the node; the wrapper
 * lets it do so once, takes the resolved function and puts itself back.
 */
export function instrument(root: ASTNode): void {
  const seen = new Set<ASTNode>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (!isNode(value) || seen.has(value)) return;
    seen.add(value);
    wrap(value);
    visit(value.args);
  };
  visit(root);
}

function wrap(node: ASTNode): void {
  const target = node as unknown as { evaluate: Evaluate };
  let real: Evaluate | undefined = Object.hasOwn(node, 'evaluate') ? target.evaluate : undefined;
  const resolve = target.evaluate;
  const wrapper: Evaluate = function (ev, ast, ctx) {
    const budget = active;
    if (budget !== null) step(budget);
    let result: unknown;
    if (real === undefined) {
      try {
        result = resolve.call(this, ev, ast, ctx);
      } finally {
        if (target.evaluate !== wrapper) real = target.evaluate;
        target.evaluate = wrapper;
      }
    } else {
      result = real.call(this, ev, ast, ctx);
    }
    if (budget !== null) charge(budget, result);
    return result;
  };
  target.evaluate = wrapper;
}

/** Runs `fn` under a fresh budget; `exceeded` is the reason when the budget ran out (whatever fn returned). */
export function withEvaluationBudget<T>(fn: () => T): { value?: T; error?: unknown; exceeded: string | null } {
  const previous = active;
  const budget: Budget = {
    steps: 0,
    size: 0,
    sinceClock: 0,
    time: threadClock.deadline(MAX_EVALUATION_MS),
    exceeded: null,
    error: null,
  };
  active = budget;
  try {
    const value = fn();
    return { value, exceeded: budget.exceeded };
  } catch (error) {
    return { error, exceeded: budget.exceeded };
  } finally {
    active = previous;
  }
}
