import { checkRequestSchema } from '@gatehook/core/rate-limit-rule-schema';
import { budgetKey, compileCounterKey, counterKey } from './counter-key';

const ORG = '6a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const USER = '0f8a4c1e-1b2d-4c3e-8f4a-5b6c7d8e9f01';
const call = (fields: Record<string, unknown>) =>
  checkRequestSchema.parse({ tool_key: 'github.create_issue', ...fields });

describe('budgetKey', () => {
  it('lists the key_by dimensions in their canonical order with the call values', () => {
    expect(budgetKey(ORG, ['org'], call({ user_id: USER }))).toBe(`org=${ORG}`);
    expect(budgetKey(ORG, ['org', 'tool', 'user'], call({ user_id: USER }))).toBe(
      `org=${ORG};tool=github.create_issue;user=${USER}`,
    );
    expect(
      budgetKey(
        ORG,
        ['agent', 'agent_instance', 'mcp', 'org'],
        call({ agent_slug: 'triage', agent_instance_id: USER, mcp_id: USER }),
      ),
    ).toBe(`agent=triage;agent_instance=${USER};mcp=${USER};org=${ORG}`);
  });

  it('counts a call without the attribute under the empty value', () => {
    expect(budgetKey(ORG, ['org', 'user'], call({}))).toBe(`org=${ORG};user=`);
  });

  it('cannot be forged by separators inside a value', () => {
    const forged = budgetKey(ORG, ['org', 'tool'], call({ tool_key: 'a;user=x' }));
    const honest = budgetKey(ORG, ['org', 'tool', 'user'], call({ tool_key: 'a', user_id: USER }));
    expect(forged).toBe(`org=${ORG};tool=a%3Buser%3Dx`);
    expect(forged).not.toBe(honest);
    // The escape character itself is escaped, so an encoded-looking value stays distinct from the real one.
    expect(budgetKey(ORG, ['org', 'tool'], call({ tool_key: 'a%3B' }))).toBe(`org=${ORG};tool=a%253B`);
  });
});

describe('counterKey', () => {
  it('puts the organisation in the hash tag, so one check touches one Redis Cluster slot', () => {
    expect(counterKey('gh', ORG, 'rule', USER)).toBe(`gh:rl:{${ORG}}:rule:${USER}`);
  });
});

describe('compileCounterKey', () => {
  it('is empty for the organisation alone and the value itself for one more dimension', () => {
    expect(compileCounterKey(['org'])(call({ user_id: USER }))).toBe('');
    const byUser = compileCounterKey(['org', 'user']);
    const c = call({ user_id: USER });
    // The call's own string: nothing is built on a check.
    expect(byUser(c)).toBe(c.user_id);
    expect(byUser(call({}))).toBe('');
    expect(compileCounterKey(['org', 'tool'])(call({ tool_key: 'a;b=c' }))).toBe('a;b=c');
  });

  it('joins several dimensions so that separators inside a value cannot forge another call', () => {
    const byToolAndUser = compileCounterKey(['org', 'tool', 'user']);
    expect(byToolAndUser(call({ user_id: USER }))).toBe(`github.create_issue;${USER}`);
    // tool "a;b" without a user is not tool "a" with a user "b".
    const forged = byToolAndUser(call({ tool_key: `a;${USER}` }));
    const honest = byToolAndUser(call({ tool_key: 'a', user_id: USER }));
    expect(forged).not.toBe(honest);
    expect(byToolAndUser(call({ tool_key: 'a%3B' }))).toBe('a%253B;');
  });
});
