import { firstSyntaxError, jsonProblem } from '@gatehook/delivery/render/json-check';

describe('jsonProblem', () => {
  it.each([
    '{}',
    '[]',
    '"text"',
    '12.5',
    'null',
    '{"a":1,"b":{"a":2}}',
    '[{"a":1},{"a":2}]',
    '{"a":"x\\"a\\":1","b":2}',
    '{"\\u0061":1,"b":[1,{"c":{}}]}',
    ' { "a" : [ ] , "b" : { } } ',
  ])('accepts %s', (text) => {
    expect(jsonProblem(text)).toBeNull();
  });

  it.each([
    ['{"a":1,"a":2}', 'duplicate member name at position 7'],
    ['{"x":{"b":1,"c":2,"b":3}}', 'duplicate member name at position 18'],
    ['[{"a":1,"a":1}]', 'duplicate member name at position 8'],
    ['{"a":1,"\\u0061":2}', 'duplicate member name at position 7'],
    ['{"a":1,}', 'not valid JSON: expected a member name at position 7'],
    ['{"a":1} {"b":2}', 'not valid JSON: unexpected text after the value at position 8'],
    ['', 'not valid JSON: unexpected end of text at position 0'],
    ['{"a": <no value>}', 'not valid JSON: unexpected character at position 6'],
  ])('rejects %s', (text, reason) => {
    expect(jsonProblem(text)).toContain(reason);
  });

  it('never quotes the text in a reason', () => {
    const secret = 'sk_live_planted_value';
    for (const text of [
      `{"a": ${secret}}`,
      `{"${secret}":1,"${secret}":2}`,
      `["${secret}\u0000"]`,
      `{"a":"${secret}`,
      `[1] ${secret}`,
    ]) {
      const reason = jsonProblem(text);
      expect(reason).not.toBeNull();
      expect(reason).not.toContain('sk_live');
    }
  });

  it('agrees with JSON.parse on what is valid', () => {
    const texts = [
      '{}',
      '[1,2]',
      '{"a":[true,false,null,-0.5e+3]}',
      '"\\u00e9"',
      '[1,]',
      '{"a" 1}',
      '{"a":01}',
      '[.5]',
      '"\\x"',
      '"a\tb"',
      '[',
      '{"a":1}}',
      'tru',
      '  ',
      '[[[]]]',
      '{"a":{}}x',
    ];
    for (const text of texts) {
      let valid = true;
      try {
        JSON.parse(text);
      } catch {
        valid = false;
      }
      expect([text, firstSyntaxError(text) === null]).toEqual([text, valid]);
    }
  });

  it('scans deep nesting without recursion', () => {
    expect(firstSyntaxError('['.repeat(500_000))).toEqual({ kind: 'unexpected end of text', position: 500_000 });
  });
});
