import { ruleScopeSchema, checkRequestSchema, type RuleScopeInput } from '@gatehook/core/rate-limit-rule-schema';
import { compileScope, ScopeCompileError } from './scope';

const U1 = '0f8a4c1e-1b2d-4c3e-8f4a-5b6c7d8e9f01';
const U2 = '1f8a4c1e-1b2d-4c3e-8f4a-5b6c7d8e9f02';
const MCP = '2f8a4c1e-1b2d-4c3e-8f4a-5b6c7d8e9f03';
const TAG = '3f8a4c1e-1b2d-4c3e-8f4a-5b6c7d8e9f04';

const scope = (fields: Partial<RuleScopeInput>) => ruleScopeSchema.parse({ type: 'mcp_tool_call', ...fields });
const call = (fields: Record<string, unknown>) =>
  checkRequestSchema.parse({ tool_key: 'github.create_issue', ...fields });
const matches = (s: Partial<RuleScopeInput>, c: Record<string, unknown>) =>
  compileScope(scope(s)).match(call(c)).matches;

describe('compileScope', () => {
  it('an empty scope matches every call', () => {
    expect(matches({}, {})).toBe(true);
    expect(matches({ user_ids: [], groups: [], tool_patterns: [] }, { user_id: U1 })).toBe(true);
  });

  it.each([
    ['user_ids', { user_ids: [U1, U2] }, { user_id: U2 }, { user_id: '9f8a4c1e-1b2d-4c3e-8f4a-5b6c7d8e9f09' }],
    ['mcp_ids', { mcp_ids: [MCP] }, { mcp_id: MCP }, { mcp_id: U1 }],
    ['agent_slugs', { agent_slugs: ['triage', 'coder'] }, { agent_slug: 'coder' }, { agent_slug: 'other' }],
    ['agent_instance_ids', { agent_instance_ids: [U1] }, { agent_instance_id: U1 }, { agent_instance_id: U2 }],
    ['groups (any shared)', { groups: ['eng', 'ops'] }, { groups: ['sales', 'ops'] }, { groups: ['sales'] }],
    [
      'agent_slug_tag_ids',
      { agent_slug_tag_ids: [TAG] },
      { agent_slug_tag_ids: [U1, TAG] },
      { agent_slug_tag_ids: [U1] },
    ],
    ['mcp_tag_ids', { mcp_tag_ids: [TAG] }, { mcp_tag_ids: [TAG] }, { mcp_tag_ids: [] }],
    ['tool_tag_ids', { tool_tag_ids: [TAG] }, { tool_tag_ids: [TAG] }, { tool_tag_ids: [U2] }],
    [
      'tool_patterns (any glob)',
      { tool_patterns: ['gitlab.*', 'github.create_*'] },
      { tool_key: 'github.create_pr' },
      { tool_key: 'github.delete_repo' },
    ],
    ['condition', { condition: 'call.cost > 5' }, { cost: 6 }, { cost: 5 }],
  ])('%s: OR within the list, and a call without a shared value does not match', (_name, s, hit, miss) => {
    expect(matches(s, hit)).toBe(true);
    expect(matches(s, miss)).toBe(false);
  });

  it('a call without the attribute does not match a non-empty field', () => {
    expect(matches({ user_ids: [U1] }, {})).toBe(false);
    expect(matches({ groups: ['eng'] }, {})).toBe(false);
    expect(matches({ mcp_ids: [MCP] }, { user_id: U1 })).toBe(false);
  });

  it('every non-empty field must match (AND)', () => {
    const s = { user_ids: [U1], tool_patterns: ['github.*'], groups: ['eng'] };
    expect(matches(s, { user_id: U1, tool_key: 'github.x', groups: ['eng'] })).toBe(true);
    expect(matches(s, { user_id: U2, tool_key: 'github.x', groups: ['eng'] })).toBe(false);
    expect(matches(s, { user_id: U1, tool_key: 'gitlab.x', groups: ['eng'] })).toBe(false);
    expect(matches(s, { user_id: U1, tool_key: 'github.x', groups: ['ops'] })).toBe(false);
  });

  it('uuids compare case-insensitively (both sides are folded to lower case)', () => {
    expect(matches({ user_ids: [U1.toUpperCase()] }, { user_id: U1 })).toBe(true);
    expect(matches({ user_ids: [U1] }, { user_id: U1.toUpperCase() })).toBe(true);
  });

  it('a condition that errors on a call does not match it and says why', () => {
    const matcher = compileScope(scope({ condition: 'call.groups[0] == "eng"' }));
    expect(matcher.match(call({ groups: ['eng'] }))).toEqual({ matches: true });
    const failed = matcher.match(call({}));
    expect(failed.matches).toBe(false);
    expect(failed.error).toBeTruthy();
  });

  it('a condition that does not compile is an error, never a scope that matches everything', () => {
    expect(() => compileScope(scope({ condition: 'call.nope == 1' }))).toThrow(ScopeCompileError);
    expect(() => compileScope(scope({ condition: 'call.cost' }))).toThrow(ScopeCompileError);
  });
});
