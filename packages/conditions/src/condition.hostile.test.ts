// Hostile conditions: one per class of attack (allocation, quadratic time, scanning), each asserting the bound
// and that evaluate() returns an error result instead of throwing, hanging or exhausting the heap.

import { compileCallCondition } from './call-condition';
import { compileEventCondition, type ConditionEventInput } from './event-condition';
import { MAX_EVALUATION_MS, MAX_EVALUATION_SIZE, MAX_EVALUATION_STEPS } from './evaluation-budget';

function event(changes: number, padding: number): ConditionEventInput {
  return {
    id: '0193a4f0-0000-7000-8000-000000000001',
    org_id: '00000000-0000-4000-8000-000000000000',
    action: 'policy.updated',
    actor_type: 'user',
    actor_id: 'u1',
    actor_display_name: 'Ada',
    resource_type: 'policy',
    resource_id: 'p1',
    resource_display_name: 'Policy',
    resources: {},
    context: { pad: 'z'.repeat(padding), ip: '203.0.113.9' },
    payload: {},
    changes: Array.from({ length: changes }, (_, i) => ({ field: `f${i}`, old: 'o', new: 'n' })),
    created_at: '2026-01-01T00:00:00Z',
  } as ConditionEventInput;
}

function compiled(expression: string) {
  const result = compileEventCondition(expression, ['policy.updated']);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('; '));
  return result.condition;
}

function timed<T>(fn: () => T): { value: T; ms: number } {
  const started = performance.now();
  const value = fn();
  return { value, ms: performance.now() - started };
}

describe('hostile conditions: refused at save', () => {
  it.each([
    [
      'string concatenation in map',
      'event.changes.map(c, event.context.pad + event.context.pad).exists(x, x.contains("#"))',
    ],
    ['string concatenation in exists', 'event.changes.exists(c, (c.field + event.context.pad).size() > 3)'],
    ['list concatenation in filter', 'event.changes.filter(c, (event.changes + event.changes).size() > 1).size() > 0'],
  ])('%s', (_name, expression) => {
    const result = compileEventCondition(expression, ['policy.updated']);
    expect(result.ok).toBe(false);
    if (!result.ok)
      expect(result.issues[0]?.message).toMatch(
        /^concatenation with \+ inside all, exists, exists_one, map or filter is not allowed at position \d+/,
      );
  });

  it('keeps numeric + and concatenation outside comprehensions', () => {
    expect(compileEventCondition('event.changes.exists(c, c.field.size() + 1 > 3)', ['policy.updated']).ok).toBe(true);
    expect(compileEventCondition('(event.actor.id + "x").startsWith("u")', ['policy.updated']).ok).toBe(true);
  });

  it('also for scope conditions of rate limit rules', () => {
    expect(compileCallCondition('call.groups.exists(g, (g + call.tool_key).size() > 3)').ok).toBe(false);
  });
});

describe('hostile conditions: bounded at evaluation', () => {
  it(`stops a quadratic nested exists at MAX_EVALUATION_STEPS (${MAX_EVALUATION_STEPS}) or MAX_EVALUATION_MS (${MAX_EVALUATION_MS})`, () => {
    expect(MAX_EVALUATION_STEPS).toBe(200_000);
    expect(MAX_EVALUATION_MS).toBe(50);
    const condition = compiled('event.changes.exists(c, event.changes.exists(d, c.field == d.old))');
    const big = event(4000, 0);
    const { value, ms } = timed(() => condition.evaluate(big));
    expect(value).toEqual({ ok: false, error: expect.stringMatching(/^condition exceeded its budget/) });
    expect(ms).toBeLessThan(1000);
  });

  it(`stops scanning a big field per element at MAX_EVALUATION_SIZE (${MAX_EVALUATION_SIZE})`, () => {
    expect(MAX_EVALUATION_SIZE).toBe(8_000_000);
    const condition = compiled('event.changes.exists(c, event.context.pad.contains(c.field))');
    const { value, ms } = timed(() => condition.evaluate(event(2000, 1_000_000)));
    expect(value).toEqual({ ok: false, error: expect.stringMatching(/^condition exceeded its budget/) });
    expect(ms).toBeLessThan(1000);
  });

  it('stops collecting a big field per element before the heap notices', () => {
    const condition = compiled('event.changes.map(c, event.context.pad).exists(x, x.contains("#"))');
    const before = process.memoryUsage().heapUsed;
    const { value, ms } = timed(() => condition.evaluate(event(50_000, 2_000_000)));
    expect(value.ok).toBe(false);
    expect(ms).toBeLessThan(1000);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(256 * 1024 * 1024);
  });

  it('a split into characters is charged by its length', () => {
    const condition = compiled('event.changes.exists(c, event.context.pad.split("").size() == 0)');
    const { value, ms } = timed(() => condition.evaluate(event(100, 1_000_000)));
    expect(value.ok).toBe(false);
    expect(ms).toBeLessThan(2000);
  });

  it('the same condition still matches on an ordinary event, and fast', () => {
    const condition = compiled('event.changes.exists(c, event.changes.exists(d, c.field == d.field))');
    const small = event(10, 100);
    expect(condition.evaluate(small)).toEqual({ ok: true, matches: true });
    const simple = compiled(
      'event.action == "policy.updated" && event.actor.type == "user" && event.context.ip.startsWith("203.")',
    );
    const runs = 20_000;
    const { ms } = timed(() => {
      for (let i = 0; i < runs; i++) simple.evaluate(small);
    });
    // Microseconds per evaluation (generous: the test machine is shared).
    expect((ms * 1000) / runs).toBeLessThan(100);
  });

  it('one exhausted budget does not leak into the next evaluation', () => {
    const condition = compiled('event.changes.exists(c, event.changes.exists(d, c.field == d.old))');
    expect(condition.evaluate(event(4000, 0)).ok).toBe(false);
    expect(condition.evaluate(event(3, 0))).toEqual({ ok: true, matches: false });
  });
});
