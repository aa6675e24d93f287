// Templates are written by users and run on every event: execution must stop, with an error, before it
// can hold a worker or its memory.

import { parseTemplate, TemplateError } from './template';

function limitError(fn: () => unknown): TemplateError {
  try {
    fn();
  } catch (err) {
    if (err instanceof TemplateError && err.kind === 'limit') return err;
    throw err;
  }
  throw new Error('expected a limit error');
}

const big = { a: Array.from({ length: 1000 }, (_, i) => i) };

describe('execution limits', () => {
  it('stops nested ranges over big data by steps', () => {
    const t = parseTemplate('t', '{{range .a}}{{range $.a}}{{range $.a}}x{{end}}{{end}}{{end}}');
    const err = limitError(() => t.execute(big, { limits: { maxOutputBytes: 1e9, maxDurationMs: 60_000 } }));
    expect(err.message).toMatch(/execution stopped after 1000000 steps$/);
  });

  it('stops by wall-clock time', () => {
    const t = parseTemplate('t', '{{range .a}}{{range $.a}}{{range $.a}}{{end}}{{end}}{{end}}');
    const started = Date.now();
    const err = limitError(() => t.execute(big, { limits: { maxSteps: 1e12, maxDurationMs: 50 } }));
    expect(err.message).toMatch(/execution stopped after 50 ms$/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('stops output at 1 MiB by default', () => {
    const t = parseTemplate('t', '{{range .a}}{{printf "%2000s" "x"}}{{end}}');
    const err = limitError(() => t.execute(big));
    expect(err.message).toMatch(/output larger than 1048576 bytes$/);
  });

  it('counts output in UTF-8 bytes', () => {
    const t = parseTemplate('t', '{{.s}}');
    expect(t.execute({ s: 'é'.repeat(5) }, { limits: { maxOutputBytes: 10 } })).toBe('ééééé');
    limitError(() => t.execute({ s: 'é'.repeat(6) }, { limits: { maxOutputBytes: 10 } }));
  });

  it('stops a string that doubles in a loop before it exhausts memory', () => {
    const t = parseTemplate('t', '{{$s := "ab"}}{{range .a}}{{$s = printf "%s%s" $s $s}}{{end}}{{len $s}}');
    const err = limitError(() => t.execute(big));
    expect(err.message).toMatch(/printf: result is larger than 1048576 characters$/);
  });

  it('stops runaway template recursion', () => {
    const t = parseTemplate('t', '{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}');
    expect(limitError(() => t.execute({})).message).toMatch(/exceeded maximum template depth \(100\)$/);
  });

  it('refuses absurdly deep nesting at parse time instead of overflowing the stack', () => {
    const text = '{{' + '('.repeat(500) + '1' + ')'.repeat(500) + '}}';
    expect(() => parseTemplate('t', text)).toThrow('nesting deeper than 200 levels');
  });

  it('reports data nested beyond the stack as a limit', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(limitError(() => parseTemplate('t', '{{json .}}').execute(deep)).message).toBe(
      'template: t: data nested too deeply to execute',
    );
  });

  it('leaves ordinary templates well within the defaults', () => {
    const t = parseTemplate('t', '{{range .a}}{{.}},{{end}}');
    expect(t.execute(big).length).toBeGreaterThan(3000);
  });
});
