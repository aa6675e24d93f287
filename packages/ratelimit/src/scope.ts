// Scope matching (SPEC 2.5, CONTRACT 8): every non-empty scope field must match (AND); within one list any value
// matches (OR); an empty or absent field is no constraint. A call that lacks an attribute a non-empty field asks
// about does not match it. The condition is CEL over `call`; one that errors on a call does not match it (as a
// webhook condition skips an event it cannot evaluate), and the error is reported to the caller for logging.

import { compileCallCondition, type CompiledCallCondition } from '@gatehook/conditions/call-condition';
import type { CheckRequest, RuleScope } from '@gatehook/core/rate-limit-rule-schema';
import { globMatches } from './glob';

/** The attributes of one tool call, as a check request carries them (uuids in lower case). */
export type ToolCall = CheckRequest;

/** Whether a scope matches a call; `error` is set when the scope's condition could not be evaluated. */
export type ScopeMatch = { matches: boolean; error?: string };

/** A compiled scope: lists as sets, globs and the CEL condition ready to run. */
export interface ScopeMatcher {
  match(call: ToolCall): ScopeMatch;
}

/** Thrown when a stored scope no longer compiles (its condition); the rule is then skipped, never widened. */
export class ScopeCompileError extends Error {
  override name = 'ScopeCompileError';
}

type Test = (call: ToolCall) => boolean;

// Shared answers: matching runs for every rule on every check.
const MATCHES: ScopeMatch = Object.freeze({ matches: true });
const DOES_NOT_MATCH: ScopeMatch = Object.freeze({ matches: false });

function oneOf(values: readonly string[], attribute: (call: ToolCall) => string | undefined): Test | null {
  if (values.length === 0) return null;
  const set = new Set(values);
  return (call) => {
    const value = attribute(call);
    return value !== undefined && set.has(value);
  };
}

function anyOf(values: readonly string[], attribute: (call: ToolCall) => readonly string[] | undefined): Test | null {
  if (values.length === 0) return null;
  const set = new Set(values);
  return (call) => (attribute(call) ?? []).some((value) => set.has(value));
}

/** Compiles a stored scope. Throws ScopeCompileError when its condition does not compile. */
export function compileScope(scope: RuleScope): ScopeMatcher {
  const tests = [
    oneOf(scope.mcp_ids, (c) => c.mcp_id),
    oneOf(scope.agent_slugs, (c) => c.agent_slug),
    oneOf(scope.agent_instance_ids, (c) => c.agent_instance_id),
    oneOf(scope.user_ids, (c) => c.user_id),
    anyOf(scope.groups, (c) => c.groups),
    anyOf(scope.agent_slug_tag_ids, (c) => c.agent_slug_tag_ids),
    anyOf(scope.mcp_tag_ids, (c) => c.mcp_tag_ids),
    anyOf(scope.tool_tag_ids, (c) => c.tool_tag_ids),
    scope.tool_patterns.length === 0
      ? null
      : (call: ToolCall) => scope.tool_patterns.some((pattern) => globMatches(pattern, call.tool_key)),
  ].filter((test): test is Test => test !== null);

  let condition: CompiledCallCondition | null = null;
  if (scope.condition.trim() !== '') {
    const compiled = compileCallCondition(scope.condition);
    if (!compiled.ok) throw new ScopeCompileError(compiled.issues.map((issue) => issue.message).join('; '));
    condition = compiled.condition;
  }

  return {
    match(call) {
      for (const test of tests) if (!test(call)) return DOES_NOT_MATCH;
      if (!condition) return MATCHES;
      const result = condition.evaluate(call);
      if (!result.ok) return { matches: false, error: result.error };
      return result.matches ? MATCHES : DOES_NOT_MATCH;
    },
  };
}
