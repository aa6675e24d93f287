import { compileCallCondition, type CallInput } from './call-condition';

const fullCall: CallInput = {
  user_id: '3f0c2d1e-0000-4000-8000-000000000001',
  agent_slug: 'support-bot',
  agent_instance_id: '3f0c2d1e-0000-4000-8000-000000000002',
  mcp_id: '3f0c2d1e-0000-4000-8000-000000000003',
  tool_key: 'github.create_issue',
  groups: ['engineering', 'oncall'],
  agent_slug_tag_ids: ['t-agent'],
  mcp_tag_ids: ['t-mcp'],
  tool_tag_ids: ['t-write'],
  cost: 5,
};

const bareCall: CallInput = { tool_key: 'slack.post_message' };

function evaluate(expression: string, call: CallInput) {
  const result = compileCallCondition(expression);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('; '));
  return result.condition.evaluate(call);
}

describe('compileCallCondition', () => {
  it.each<[string, CallInput, boolean]>([
    ['call.tool_key.startsWith("github.")', fullCall, true],
    ['call.tool_key.startsWith("github.")', bareCall, false],
    ['"oncall" in call.groups && call.agent_slug == "support-bot"', fullCall, true],
    ['"oncall" in call.groups', bareCall, false],
    ['call.cost > 3', fullCall, true],
    ['call.cost > 3.5 && call.cost == 5 && call.cost == 5.0', fullCall, true],
    ['call.cost == 1', bareCall, true],
    ['call.user_id == ""', bareCall, true],
    ['call.user_id != "" && call.mcp_id != ""', fullCall, true],
    ['size(call.tool_tag_ids) == 0 && call.agent_instance_id == ""', bareCall, true],
    ['call.tool_tag_ids.exists(t, t == "t-write") || call.mcp_tag_ids.exists(t, t == "t-none")', fullCall, true],
    ['call.tool_key.matches("^(github|gitlab)\\\\.")', fullCall, true],
    ['has(call.user_id)', bareCall, true],
  ])('%s', (expression, call, matches) => {
    expect(evaluate(expression, call)).toEqual({ ok: true, matches });
  });

  it.each<[string, RegExp]>([
    ['call.tool_key', /^condition must evaluate to a boolean, but evaluates to string$/],
    ['call.tool_key ==', /^syntax error/],
    ['call.unknown == "x"', /^type error.*No such key: unknown/],
    ['event.action == "x"', /^type error/],
    ['call.cost == "5"', /^type error.*no such overload/],
    ['call.tool_key.matches("(a)\\\\1")', /invalid regular expression/],
    [`call.tool_key == "${'x'.repeat(1100)}"`, /at most 1024 are allowed$/],
    ['[1].all(a, [1].all(b, [1].all(c, true)))', /may nest at most 2 deep$/],
  ])('rejects %s', (expression, message) => {
    const result = compileCallCondition(expression);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues[0]?.message).toMatch(message);
  });

  it('errors on a cost that is not an integer', () => {
    expect(evaluate('call.cost > 0', { tool_key: 'x', cost: 1.5 })).toEqual({
      ok: false,
      error: 'cost is not an integer: 1.5',
    });
  });
});
