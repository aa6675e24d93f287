// Conditions are user input: whatever fits in 1024 characters must compile to a result or an issue, never throw
// out of the package or run for long.

import { compileBoolean, createConditionEnvironment, evaluateBoolean, MAX_CONDITION_LENGTH } from './cel';

const env = createConditionEnvironment().registerVariable('m', 'map<string, dyn>');

describe('compileBoolean', () => {
  it.each<[string, string]>([
    ['a long chain of negations', `${'!'.repeat(MAX_CONDITION_LENGTH - 4)}true`],
    [
      'a long member chain',
      `m${'.a'.repeat((MAX_CONDITION_LENGTH - 1) / 2)}`.slice(0, MAX_CONDITION_LENGTH - 5) + ' == 1',
    ],
    [
      'a long || chain',
      Array.from({ length: 200 }, () => 'true')
        .join('||')
        .slice(0, MAX_CONDITION_LENGTH - 4) + 'true',
    ],
    ['deep parentheses', `${'('.repeat(500)}true${')'.repeat(500)}`],
    ['deep lists', `${'['.repeat(500)}${']'.repeat(500)} == []`],
    ['a null byte', 'true\u0000'],
    ['unicode', '"Grüße 👋" == "Grüße 👋"'],
  ])('handles %s without throwing', (_name, expression) => {
    expect(expression.length).toBeLessThanOrEqual(MAX_CONDITION_LENGTH);
    const started = performance.now();
    const result = compileBoolean(env, expression);
    if (result.ok) evaluateBoolean(result.program, { m: {} });
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('gives one-line issues', () => {
    const result = compileBoolean(env, 'm.a ==\n  ');
    expect(result).toEqual({ ok: false, issues: [{ message: expect.not.stringContaining('\n') }] });
  });

  it('compares doubles and ints both ways', () => {
    for (const expression of ['1.0 == 1', '1 == 1.0', '2 != 1.0', '1.5 > 1', '1 < 1.5']) {
      const result = compileBoolean(env, expression);
      expect(result.ok && evaluateBoolean(result.program, {})).toEqual({ ok: true, matches: true });
    }
  });
});
