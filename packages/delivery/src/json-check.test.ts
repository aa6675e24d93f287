import { jsonProblem } from '@gatehook/delivery/json-check';

describe('jsonProblem', () => {
  it.each([
    '{}', '[]', '"text"', '12.5', 'null', '{"a":1,"b":{"a":2}}', '[{"a":1},{"a":2}]',
    '{"a":"x\\"a\\":1","b":2}', '{"\\u0061":1,"b":[1,{"c":{}}]}', ' { "a" : [ ] , "b" : { } } ',
  ])('accepts %s', (text) => {
    expect(jsonProblem(text)).toBeNull();
  });

  it.each([
    ['{"a":1,"a":2}', 'duplicate member name "a"'],
    ['{"x":{"b":1,"c":2,"b":3}}', 'duplicate member name "b"'],
    ['[{"a":1,"a":1}]', 'duplicate member name "a"'],
    ['{"a":1,"\\u0061":2}', 'duplicate member name "a"'],
    ['{"a":1,}', 'not valid JSON'],
    ['{"a":1} {"b":2}', 'not valid JSON'],
    ['', 'not valid JSON'],
    ['{"a": <no value>}', 'not valid JSON'],
  ])('rejects %s', (text, reason) => {
    expect(jsonProblem(text)).toContain(reason);
  });
});
