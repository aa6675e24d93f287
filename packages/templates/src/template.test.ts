import { defaultFuncs, FuncError, parseTemplate, TemplateError, type TemplateFunction } from './template';

function render(text: string, data: unknown = {}): string {
  return parseTemplate('t', text).execute(data);
}

function failure(fn: () => unknown): TemplateError {
  try {
    fn();
  } catch (err) {
    if (err instanceof TemplateError) return err;
    throw err;
  }
  throw new Error('expected a TemplateError');
}

describe('public API', () => {
  it('compiles once and renders many events', () => {
    const t = parseTemplate('payload', '{"action": {{json .Action}}}');
    expect(t.execute({ Action: 'policy.created' })).toBe('{"action": "policy.created"}');
    expect(t.execute({ Action: 'tag.created' })).toBe('{"action": "tag.created"}');
  });

  it('reports parse errors with kind, line and Go column', () => {
    const err = failure(() => parseTemplate('t', 'a\nb {{nope}}'));
    expect(err.kind).toBe('parse');
    expect(err.message).toBe('template: t:2: function "nope" not defined');
    expect(err.line).toBe(2);
    expect(err.col).toBe(4);
  });

  it('reports execution errors with the node Go names', () => {
    const err = failure(() => render('x\n  {{.a.b}}', { a: 's' }));
    expect(err.kind).toBe('exec');
    expect(err.message).toBe(`template: t:2:6: executing "t" at <.a.b>: can't evaluate field b in type interface {}`);
    expect([err.line, err.col]).toEqual([2, 6]);
  });

  it('lists the templates a text defines', () => {
    expect(parseTemplate('t', '{{define "b"}}{{end}}{{block "a" .}}{{end}}').templateNames).toEqual(['a', 'b', 't']);
  });

  it('takes extra functions with Go signatures and checks their arguments', () => {
    const upper: TemplateFunction = { params: ['string'], fn: (s: string) => s.toUpperCase() };
    const funcs = new Map([...defaultFuncs, ['upper', upper]]);
    const t = parseTemplate('t', '{{upper .a}} {{json .a}}', { funcs });
    expect(t.execute({ a: 'x' })).toBe('X "x"');
    expect(failure(() => t.execute({ a: 1 })).message).toBe(
      'template: t:1:8: executing "t" at <.a>: wrong type for value; expected string; got float64',
    );
  });

  it('turns a throwing function into Go\'s "error calling"', () => {
    const boom: TemplateFunction = {
      params: [],
      fn: () => {
        throw new FuncError('nope');
      },
    };
    const t = parseTemplate('t', '{{boom}}', { funcs: { boom } });
    expect(failure(() => t.execute({})).message).toBe(
      'template: t:1:2: executing "t" at <boom>: error calling boom: nope',
    );
  });

  it('replaces the defaults when funcs are given, so json is then unknown', () => {
    expect(failure(() => parseTemplate('t', '{{json .}}', { funcs: {} })).message).toBe(
      'template: t:1: function "json" not defined',
    );
  });

  it('rejects a function name that is not an identifier', () => {
    const f: TemplateFunction = { params: [], fn: () => 1 };
    expect(() => parseTemplate('t', '', { funcs: { 'a-b': f } })).toThrow('not a valid identifier');
  });

  it('overriding a builtin drops its short-circuit, as in Go', () => {
    const and: TemplateFunction = { params: [], variadic: 'any', fn: (...a: unknown[]) => a.length };
    expect(parseTemplate('t', '{{and 1 2 3}}', { funcs: { and } }).execute({})).toBe('3');
  });

  it('accepts Maps as data maps and bigints as Go ints', () => {
    expect(render('{{.m.k}} {{printf "%T %d" .n .n}}', { m: new Map([['k', 'v']]), n: 7n })).toBe('v int 7');
  });
});

describe('later Go features', () => {
  it('ranges over an integer (Go 1.22)', () => {
    expect(render('{{range $i := 3}}{{$i}}{{end}}')).toBe('012');
  });

  it('chains else with (Go 1.23)', () => {
    expect(render('{{with .a}}a{{else with .b}}b{{.}}{{else}}none{{end}}', { b: 2 })).toBe('b2');
  });
});
