import { findUnstorable, MAX_JSON_DEPTH, MAX_JSON_NODES } from './storable-json';

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

describe('findUnstorable: hostile bodies', () => {
  it(`refuses more than MAX_JSON_NODES (${MAX_JSON_NODES}) values as too large`, () => {
    expect(MAX_JSON_NODES).toBe(500_000);
    expect(findUnstorable(new Array(MAX_JSON_NODES - 1).fill(0))).toBeNull();
    const found = findUnstorable({ events: [{ payload: { list: new Array(MAX_JSON_NODES).fill(0) } }] });
    expect(found).toMatchObject({ path: 'events.0.payload.list', tooLarge: true });
  });

  it('walks 5 MB of tiny values in linear time, well under a second', () => {
    const text = `{"events":[{"payload":{"v":[${new Array(2_400_000).fill('0').join(',')}]}}]}`;
    expect(text.length).toBeLessThan(5 * 1024 * 1024);
    const value: unknown = JSON.parse(text);
    const accepted = JSON.parse(`[${new Array(50_000).fill('{"a":"b"}').join(',')}]`) as unknown;
    const started = performance.now();
    expect(findUnstorable(value)?.tooLarge).toBe(true);
    expect(findUnstorable(accepted)).toBeNull();
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('refuses what JSON cannot carry, from in-process callers', () => {
    expect(findUnstorable({ payload: { at: new Date() } })).toMatchObject({
      path: 'payload.at',
      message: 'is not a JSON value',
    });
    expect(findUnstorable({ n: Number.NaN })).toMatchObject({ path: 'n', message: 'must be a finite number' });
    expect(findUnstorable({ u: undefined })).toMatchObject({ path: 'u', message: 'is not a JSON value' });
    expect(findUnstorable({ m: new Map() })).toMatchObject({ path: 'm', message: 'is not a JSON value' });
    expect(findUnstorable(JSON.parse('{"constructor":{"constructor":[1]},"__proto__":{"a":"\\u0000"}}'))).toMatchObject(
      { path: '__proto__.a' },
    );
    expect(findUnstorable(Object.assign(Object.create(null), { a: ['x'] }))).toBeNull();
  });
});
