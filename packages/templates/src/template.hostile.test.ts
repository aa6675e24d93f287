// Hostile templates: each case asserts a bound (time, size) and that no error quotes data. The inputs are our
// own; they stand for the known attacks on a template engine (a function on a padded megabyte inside a range,
// printf widths, values echoed in errors).

import { FUNCTION_CHUNK_CHARS, MAX_PRINTF_WIDTH } from './budget';
import { CLOCK_EVERY_STEPS } from './exec';
import { parseTemplate, TemplateError } from './template';

const SECRET = 'sk_live_5ecret_planted_in_data';

function failure(text: string, data: unknown, limits = {}): { error: TemplateError; ms: number } {
  const started = performance.now();
  try {
    parseTemplate('t', text).execute(data, { limits });
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    return { error: err, ms: performance.now() - started };
  }
  throw new Error('expected the template to fail');
}

describe('hostile templates: time', () => {
  // ~1 MiB of characters that every escaper expands.
  const padded = { s: '<é& "'.repeat(200_000) };

  it.each(['urlquery', 'js', 'html', 'escape'])('%s on a padded megabyte in a range stops at the deadline', (fn) => {
    const { error, ms } = failure(`{{range 500}}{{$x := ${fn} $.s}}{{end}}`, padded, {
      maxDurationMs: 100,
      maxOutputBytes: 8 * 1024 * 1024,
    });
    expect(error.kind).toBe('limit');
    expect(error.message).toMatch(/stopped after 100 ms|larger than/);
    // The deadline is read between chunks inside the function, not only between steps.
    expect(ms).toBeLessThan(1000);
  });

  it('checks the clock inside a single call, between chunks of its input', () => {
    expect(FUNCTION_CHUNK_CHARS).toBe(16_384);
    const { error, ms } = failure('{{urlquery .s}}', padded, { maxDurationMs: 1, maxOutputBytes: 16 * 1024 * 1024 });
    expect(error.kind).toBe('limit');
    expect(error.message).toMatch(/urlquery: execution stopped after 1 ms$/);
    expect(ms).toBeLessThan(500);
  });

  it('reads the clock at least every CLOCK_EVERY_STEPS plain steps', () => {
    expect(CLOCK_EVERY_STEPS).toBe(64);
    const { error, ms } = failure('{{range 100000000}}{{end}}', {}, { maxDurationMs: 20, maxSteps: 1e12 });
    expect(error.message).toMatch(/stopped after 20 ms$/);
    expect(ms).toBeLessThan(500);
  });

  it('json over a huge list stops at the deadline or the size cap', () => {
    const data = { l: Array.from({ length: 200_000 }, (_, i) => ({ i, s: 'x'.repeat(20) })) };
    const { error, ms } = failure('{{range 100}}{{$x := json $.l}}{{end}}', data, { maxDurationMs: 100 });
    expect(error.kind).toBe('limit');
    expect(ms).toBeLessThan(1500);
  });
});

describe('hostile templates: size', () => {
  it(`refuses a printf width or precision over MAX_PRINTF_WIDTH (${MAX_PRINTF_WIDTH})`, () => {
    expect(MAX_PRINTF_WIDTH).toBe(10_000);
    expect(parseTemplate('t', `{{printf "%${MAX_PRINTF_WIDTH}d" 1}}`).execute({})).toHaveLength(MAX_PRINTF_WIDTH);
    for (const text of [
      `{{printf "%${MAX_PRINTF_WIDTH + 1}d" 1}}`,
      '{{printf "%.999999f" 1.5}}',
      '{{printf "%*d" 999999 1}}',
    ]) {
      const { error } = failure(text, {});
      expect(error.kind).toBe('limit');
      expect(error.message).toMatch(/printf: width or precision larger than 10000$/);
    }
  });

  it('stops a printf with hundreds of wide verbs at the output cap, before building it all', () => {
    const verbs = '%9999d'.repeat(400);
    const args = ' 1'.repeat(400);
    const { error, ms } = failure(`{{printf "${verbs}"${args}}}`, {}, { maxOutputBytes: 64 * 1024 });
    expect(error.message).toMatch(/printf: result is larger than 65536 characters$/);
    expect(ms).toBeLessThan(500);
  });

  it('refuses an escaper input over the string cap without processing it', () => {
    const { error, ms } = failure('{{js .s}}', { s: 'a'.repeat(2 * 1024 * 1024) });
    expect(error.message).toMatch(/js: input of 2097152 characters is larger than 1048576$/);
    expect(ms).toBeLessThan(500);
  });

  it('refuses json of a string over the string cap', () => {
    const { error } = failure('{{json .s}}', { s: 'b'.repeat(2 * 1024 * 1024) });
    expect(error.kind).toBe('limit');
    expect(error.message).toMatch(/^template: t:1:2: executing "t" at <json .s>: json: input of/);
  });

  it('caps the total output', () => {
    const { error } = failure('{{range 100000}}{{printf "%5000s" "x"}}{{end}}', {});
    expect(error.message).toMatch(/output larger than 1048576 bytes$/);
  });
});

describe('hostile templates: errors never quote data', () => {
  it.each([
    ['epoch of a value', '{{epoch .s}}'],
    ['range over a string', '{{range .s}}{{end}}'],
    ['eq over maps', '{{eq .m .m}}'],
    ['eq over a map and a list', '{{eq .m .l}}'],
    ['two-variable range over a number', '{{range $i, $e := .n}}{{end}}'],
    ['a function input over the cap', '{{urlquery .big}}'],
  ])('%s', (_name, text) => {
    const data = { s: SECRET, m: { k: SECRET }, l: [SECRET], n: 3n, big: SECRET.repeat(40_000) };
    const { error } = failure(text, data);
    expect(error.message).not.toContain('sk_live');
    expect(error.message).not.toContain('5ecret');
  });
});
