import { findUnstorable, MAX_JSON_DEPTH } from './storable-json';

describe('findUnstorable', () => {
  it('accepts ordinary JSON, including astral characters (paired surrogates)', () => {
    expect(findUnstorable({ a: ['x', 1, null, true, { b: 'é 😀 \u2028' }] })).toBeNull();
  });

  it.each([
    [{ name: 'a\u0000b' }, 'name', /NUL/],
    [{ events: [{ payload: { x: '\ud800' } }] }, 'events.0.payload.x', /surrogate/],
    [{ payload: { ['k\u0000']: 1 } }, 'payload', /member name.*NUL/],
    [['ok', '\udc00x'], '1', /surrogate/],
  ])('names the field of %j', (value, path, message) => {
    const found = findUnstorable(value);
    expect(found?.path).toBe(path);
    expect(found?.message).toMatch(message);
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels without overflowing on 100,000`, () => {
    const nest = (depth: number) => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i += 1) value = { a: value };
      return value;
    };
    expect(findUnstorable(nest(MAX_JSON_DEPTH))).toBeNull();
    expect(findUnstorable(nest(MAX_JSON_DEPTH + 1))?.message).toMatch(/nested more than 64/);
    expect(findUnstorable(JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`))?.message).toMatch(/nested/);
  });
});
