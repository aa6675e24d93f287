// What every condition shares, whatever its variable: the CEL environment options and limits, compile to a
// type-checked boolean program, evaluate to a result instead of a throw, and readable issues.

import {
  Environment,
  EvaluationError,
  ParseError,
  TypeError as CelTypeError,
  type ASTNode,
  type ParseResult,
} from '@marcbachmann/cel-js';
import { typedCostIssues, type ConditionIssue } from './condition-ast';
import { instrument, withEvaluationBudget } from './evaluation-budget';
import { registerRe2Matches } from './re2-matches';

/** SPEC 6.2.2 and section 8: a condition is at most 1024 characters. */
export const MAX_CONDITION_LENGTH = 1024;

/**
 * Parse-time limits. A 1024-character expression is small, so these bind only on pathological shapes; they keep
 * parsing and checking (both recursive) well away from the stack limit.
 */
const LIMITS = {
  maxAstNodes: 1024,
  maxDepth: 64,
  maxListElements: 256,
  maxMapEntries: 64,
  maxCallArguments: 8,
};

/** One readable problem with a condition, for a 422 on `condition`. */
export type { ConditionIssue };

/** The outcome of running a condition on one input: an error means the caller skips the input. */
export type EvaluationResult = { ok: true; matches: boolean } | { ok: false; error: string };

/** A new environment with the limits, RE2 `matches` and numeric equality every condition gets. */
export function createConditionEnvironment(): Environment {
  const env = new Environment({ limits: LIMITS });
  registerRe2Matches(env);
  // JSON has one number type. Payload numbers are CEL doubles, and people write `score == 1` or `cost == 1.0`;
  // CEL's checker rejects double == int (only a runtime dyn comparison is heterogeneous). cel-js registers the
  // mirrored int == double and derives != from this overload. Ordering (<, >) across int and double is built in.
  env.registerOperator('double == int', (a: number, b: bigint) => a === Number(b));
  return env;
}

/** A parsed and type-checked condition, ready to evaluate. */
export type BooleanProgram = ParseResult;

/** A compiled program, or why the expression is not a valid condition. */
export type ProgramResult = { ok: true; program: BooleanProgram } | { ok: false; issues: ConditionIssue[] };

/**
 * Length, syntax, the caller's own look at the AST (`inspect`), type check, boolean result. `inspect` runs before
 * the type check so that its issues (e.g. a payload field no subscribed event carries) win over the checker's
 * terser ones for the same mistake.
 */
export function compileBoolean(
  env: Environment,
  expression: string,
  inspect: (ast: ASTNode) => ConditionIssue[] = () => [],
): ProgramResult {
  if (expression.length > MAX_CONDITION_LENGTH) {
    return fail(`condition is ${expression.length} characters long, at most ${MAX_CONDITION_LENGTH} are allowed`);
  }
  if (expression.trim() === '') return fail('condition is empty');
  let program: ParseResult;
  try {
    program = env.parse(expression);
  } catch (err) {
    return { ok: false, issues: [issueOf(err)] };
  }
  const inspected = inspect(program.ast);
  if (inspected.length > 0) return { ok: false, issues: inspected };
  const checked = program.check();
  if (!checked.valid) return { ok: false, issues: [issueOf(checked.error)] };
  if (checked.type !== 'bool') {
    return fail(`condition must evaluate to a boolean, but evaluates to ${checked.type ?? 'an unknown type'}`);
  }
  const typed = typedCostIssues(program.ast);
  if (typed.length > 0) return { ok: false, issues: typed };
  instrument(program.ast);
  return { ok: true, program };
}

/**
 * Runs a program under the evaluation budget; any error, an exhausted budget, or a non-boolean becomes `{ok: false}`.
 */
export function evaluateBoolean(program: BooleanProgram, variables: Record<string, unknown>): EvaluationResult {
  const run = withEvaluationBudget(() => program(variables));
  // Over budget wins over any value: a comprehension may have swallowed the error and gone on.
  if (run.exceeded !== null) return { ok: false, error: run.exceeded };
  if (run.error !== undefined) return { ok: false, error: errorText(run.error) };
  const value = run.value;
  if (typeof value !== 'boolean') return { ok: false, error: 'condition did not evaluate to a boolean' };
  return { ok: true, matches: value };
}

function fail(message: string): { ok: false; issues: ConditionIssue[] } {
  return { ok: false, issues: [{ message }] };
}

function errorText(err: unknown): string {
  if (err instanceof EvaluationError || err instanceof ParseError || err instanceof CelTypeError) return err.summary;
  return err instanceof Error ? err.message : String(err);
}

/** cel-js messages carry a multi-line source excerpt; a 422 wants one line with the position instead. */
function issueOf(err: unknown): ConditionIssue {
  if (!(err instanceof ParseError || err instanceof CelTypeError)) return { message: errorText(err) };
  const kind = err instanceof ParseError ? 'syntax error' : 'type error';
  const at = err.range ? ` at position ${err.range.start + 1}` : '';
  return { message: `${kind}${at}: ${err.summary}${hintFor(err.summary)}` };
}

function hintFor(summary: string): string {
  if (/double in list<int>|double [-+*/%] int|int [-+*/%] double/.test(summary)) {
    return ' (payload numbers are doubles: write 1.0 rather than 1)';
  }
  return '';
}
