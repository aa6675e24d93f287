// Rate limit rule scope conditions (CONTRACT 8): one CEL expression over the variable `call`, the attributes of
// the check request. Every field is always present so that conditions need no has(): an absent string is "",
// an absent list is [], an absent cost is 1 (the contract's default). So has(call.user_id) is always true; test
// `call.user_id != ""` instead. `call.cost` is a CEL int; it compares with doubles too (`call.cost > 0.5`).

import type { Environment } from '@marcbachmann/cel-js';
import {
  compileBoolean,
  createConditionEnvironment,
  evaluateBoolean,
  type BooleanProgram,
  type ConditionIssue,
  type EvaluationResult,
} from './cel';
import { costIssues } from './condition-ast';

/** The attributes of a rate limit check request (CONTRACT 8), as a scope condition sees them. */
export interface CallInput {
  user_id?: string;
  agent_slug?: string;
  agent_instance_id?: string;
  mcp_id?: string;
  tool_key: string;
  groups?: string[];
  agent_slug_tag_ids?: string[];
  mcp_tag_ids?: string[];
  tool_tag_ids?: string[];
  cost?: number;
}

/** A compiled scope condition. */
export interface CompiledCallCondition {
  readonly expression: string;
  evaluate(call: CallInput): EvaluationResult;
}

/** The outcome of compiling a scope condition. */
export type CallCompileResult =
  { ok: true; condition: CompiledCallCondition } | { ok: false; issues: ConditionIssue[] };

let environment: Environment | undefined;

function callEnvironment(): Environment {
  environment ??= createConditionEnvironment().registerVariable({
    name: 'call',
    schema: {
      user_id: 'string',
      agent_slug: 'string',
      agent_instance_id: 'string',
      mcp_id: 'string',
      tool_key: 'string',
      groups: 'list<string>',
      agent_slug_tag_ids: 'list<string>',
      mcp_tag_ids: 'list<string>',
      tool_tag_ids: 'list<string>',
      cost: 'int',
    },
  });
  return environment;
}

/** Compiles a scope condition: syntax, boolean result type, length <= 1024. */
export function compileCallCondition(expression: string): CallCompileResult {
  const compiled = compileBoolean(callEnvironment(), expression, costIssues);
  if (!compiled.ok) return compiled;
  return { ok: true, condition: new CallCondition(expression, compiled.program) };
}

class CallCondition implements CompiledCallCondition {
  constructor(
    readonly expression: string,
    private readonly program: BooleanProgram,
  ) {}

  evaluate(call: CallInput): EvaluationResult {
    const cost = call.cost ?? 1;
    if (!Number.isSafeInteger(cost)) return { ok: false, error: `cost is not an integer: ${cost}` };
    return evaluateBoolean(this.program, {
      call: {
        user_id: call.user_id ?? '',
        agent_slug: call.agent_slug ?? '',
        agent_instance_id: call.agent_instance_id ?? '',
        mcp_id: call.mcp_id ?? '',
        tool_key: call.tool_key,
        groups: call.groups ?? [],
        agent_slug_tag_ids: call.agent_slug_tag_ids ?? [],
        mcp_tag_ids: call.mcp_tag_ids ?? [],
        tool_tag_ids: call.tool_tag_ids ?? [],
        // CEL ints are BigInt in cel-js; a plain number would be taken for a double and fail the int field.
        cost: BigInt(cost),
      },
    });
  }
}
