// `matches` runs user-written patterns on every event, so it must be RE2 (linear time), not JavaScript's
// backtracking RegExp. These tests go through the condition API, the way the delivery engine uses it.

import { compileEventCondition, type ConditionEventInput } from './event-condition';

function eventWithActorName(name: string, context: Record<string, unknown> = {}): ConditionEventInput {
  return {
    id: 'e-1',
    org_id: 'o-1',
    action: 'policy.created',
    actor_type: 'user',
    actor_id: 'u-1',
    actor_display_name: name,
    resource_type: 'policy',
    resource_id: 'p-1',
    resource_display_name: 'Policy',
    resources: {},
    context,
    changes: [],
    payload: {},
    created_at: '2026-01-01T00:00:00.000Z',
  };
}

function compiled(expression: string) {
  const result = compileEventCondition(expression, ['*']);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('; '));
  return result.condition;
}

function issue(expression: string): string {
  const result = compileEventCondition(expression, ['*']);
  if (result.ok) throw new Error(`expected ${expression} to be rejected`);
  return result.issues.map((i) => i.message).join('; ');
}

const catastrophicName = 'a'.repeat(100_000) + '!';

describe('matches', () => {
  it('runs (a+)+$ on 100,000 characters in bounded time (backtracking would not finish)', () => {
    const condition = compiled('event.actor.name.matches("(a+)+$")');
    const started = performance.now();
    expect(condition.evaluate(eventWithActorName(catastrophicName))).toEqual({ ok: true, matches: false });
    // RE2 takes a few milliseconds here; the bound is loose for slow CI machines.
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('is RE2 also for a pattern that comes from the event', () => {
    const condition = compiled('event.actor.name.matches(event.context.pattern)');
    const started = performance.now();
    expect(condition.evaluate(eventWithActorName(catastrophicName, { pattern: '(a|aa)+$' }))).toEqual({
      ok: true,
      matches: false,
    });
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it.each([
    [
      'a backreference',
      'event.actor.name.matches("(a)\\\\1")',
      /invalid regular expression "\(a\)\\\\1": invalid escape sequence: `\\1`/,
    ],
    ['a lookahead', 'event.actor.name.matches("a(?=b)")', /invalid regular expression "a\(\?=b\)": .*/],
    ['an unclosed group', 'matches(event.actor.name, "(a")', /invalid regular expression "\(a": missing closing \)/],
  ])('rejects %s at compile time, which JavaScript RegExp would accept', (_name, expression, message) => {
    expect(issue(expression)).toMatch(/^syntax error at position \d+: /);
    expect(issue(expression)).toMatch(message);
  });

  it.each<[string, string, boolean]>([
    ['"Ada Lovelace".matches("Love")', 'partial match', true],
    ['"Ada Lovelace".matches("^Love")', 'anchored start', false],
    ['"Ada Lovelace".matches("^Ada Lovelace$")', 'anchored both', true],
    ['"ADA".matches("(?i)^ada$")', 'RE2 flags', true],
    ['"x1y22".matches("\\\\d{2}")', 'escapes and counts', true],
    ['"Grüße".matches("^\\\\pL+$")', 'unicode classes', true],
    ['matches("abc", "b")', 'function form', true],
  ])('%s (%s)', (expression, _name, expected) => {
    expect(compiled(expression).evaluate(eventWithActorName('x'))).toEqual({ ok: true, matches: expected });
  });

  it('makes a bad pattern from the event an evaluation error, not a crash', () => {
    const result = compiled('event.actor.name.matches(event.context.pattern)').evaluate(
      eventWithActorName('aa', { pattern: '(a)\\1' }),
    );
    expect(result).toEqual({ ok: false, error: expect.stringMatching(/^invalid regular expression/) });
  });

  it('makes a non-string from dyn an evaluation error', () => {
    const result = compiled('event.context.n.matches("1")').evaluate(eventWithActorName('aa', { n: 1 }));
    expect(result).toEqual({ ok: false, error: 'matches() needs a string to search' });
  });

  it('rejects a non-string subject or pattern at compile time', () => {
    expect(issue('event.changes.matches("a")')).toMatch(/no such overload: matches\(list<dyn>, string\)/);
    expect(issue('event.action.matches(1)')).toMatch(/no such overload: matches\(string, int\)/);
  });
});
