// CEL's `matches` must run in linear time (CONTRACT 7a): conditions are written by users and run on every event,
// and cel-js's built-in `matches` uses JavaScript's backtracking RegExp, where `(a+)+$` on a long input never ends.
// cel-js refuses to register a second `string.matches(string)` (it overlaps the built-in), but it looks macros up
// by name and arity only, at parse time, before any type is known. So a macro named `matches` takes every
// `x.matches(p)` call away from the built-in, and this file evaluates it with re2js (RE2 semantics, no
// backreferences or lookarounds). The built-in macros `all`/`exists`/`map` rely on the same lookup.

import { EvaluationError, ParseError, type ASTNode, type Environment } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';

/** The parts of cel-js's custom-macro contract (README "Custom macros") this file uses. */
interface TypeDeclarationLike {
  name: string;
  kind: string;
}
interface MacroChecker {
  check(node: ASTNode, ctx: unknown): TypeDeclarationLike;
  getType(name: string): TypeDeclarationLike;
  createError(code: string, message: string, node: ASTNode): Error;
}
interface MacroEvaluator {
  run(node: ASTNode, ctx: unknown): unknown;
}
interface MacroCall {
  ast: ASTNode;
  args: ASTNode[];
  receiver: ASTNode | null;
}

/** Patterns that are not literals compile at evaluation; a small cache keeps that off the per-event path. */
const DYNAMIC_PATTERN_CACHE_SIZE = 256;
const dynamicPatterns = new Map<string, RE2JS>();

function compilePattern(pattern: string): RE2JS {
  // RE2JS.compile throws RE2JSSyntaxException with a readable message, e.g. "invalid escape sequence: `\1`".
  return RE2JS.compile(pattern);
}

function dynamicPattern(pattern: string, node: ASTNode): RE2JS {
  let re = dynamicPatterns.get(pattern);
  if (re) return re;
  try {
    re = compilePattern(pattern);
  } catch (err) {
    throw new EvaluationError(`invalid regular expression ${JSON.stringify(pattern)}: ${regexReason(err)}`, node);
  }
  if (dynamicPatterns.size >= DYNAMIC_PATTERN_CACHE_SIZE) {
    const oldest = dynamicPatterns.keys().next().value;
    if (oldest !== undefined) dynamicPatterns.delete(oldest);
  }
  dynamicPatterns.set(pattern, re);
  return re;
}

function regexReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/^error parsing regexp: /, '');
}

function isStringLike(type: TypeDeclarationLike): boolean {
  return type.name === 'string' || type.kind === 'dyn';
}

function matchesMacro(subjectOf: (call: MacroCall) => ASTNode, patternOf: (call: MacroCall) => ASTNode) {
  return (call: MacroCall) => {
    const subject = subjectOf(call);
    const pattern = patternOf(call);
    let literal: RE2JS | undefined;
    if (pattern.op === 'value' && typeof pattern.args === 'string') {
      // A literal pattern is compiled once, here, so a bad one is a save-time error rather than a skipped event.
      try {
        literal = compilePattern(pattern.args);
      } catch (err) {
        throw new ParseError({
          code: 'invalid_regular_expression',
          message: `invalid regular expression ${JSON.stringify(pattern.args)}: ${regexReason(err)}`,
          node: pattern,
        });
      }
    }
    return {
      async: false,
      typeCheck(checker: MacroChecker, _macro: unknown, ctx: unknown) {
        const subjectType = checker.check(subject, ctx);
        const patternType = checker.check(pattern, ctx);
        if (!isStringLike(subjectType) || !isStringLike(patternType)) {
          throw checker.createError(
            'no_such_overload',
            `no such overload: matches(${subjectType.name}, ${patternType.name}), expected (string, string)`,
            call.ast,
          );
        }
        return checker.getType('bool');
      },
      evaluate(evaluator: MacroEvaluator, _macro: unknown, ctx: unknown) {
        const text = evaluator.run(subject, ctx);
        if (typeof text !== 'string') throw new EvaluationError('matches() needs a string to search', subject);
        if (literal) return literal.test(text);
        const source = evaluator.run(pattern, ctx);
        if (typeof source !== 'string') throw new EvaluationError('matches() needs a string pattern', pattern);
        return dynamicPattern(source, pattern).test(text);
      },
    };
  };
}

/**
 * Replaces CEL `matches` (method and function form) in an environment by an RE2 implementation; partial match,
 * as in CEL: anchor with `^` and `$` for a whole-string match.
 */
export function registerRe2Matches(env: Environment): void {
  // The receiver type only keeps cel-js's overlap check quiet; the macro applies to any receiver (see top).
  // cel-js calls a macro only with its registered arity, so the receiver and arguments are there.
  env.registerFunction(
    'list.matches(ast): bool',
    matchesMacro(
      (c) => c.receiver as ASTNode,
      (c) => c.args[0] as ASTNode,
    ),
  );
  env.registerFunction(
    'matches(ast, ast): bool',
    matchesMacro(
      (c) => c.args[0] as ASTNode,
      (c) => c.args[1] as ASTNode,
    ),
  );
}
