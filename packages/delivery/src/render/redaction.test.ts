import { marshalJSON } from '@gatehook/templates/json';
import { escapeMarkup } from '@gatehook/templates/gatehook-funcs';
import { MAX_REDACTED_BODY_LENGTH, REDACTED, REDACTION_WITHHELD, Redactor } from './redaction';

// Values whose escaping matters: quotes, backslashes, markup, non-ASCII (BMP and astral), line breaks, slashes.
const SECRETS = ['tok"en\\with<markup>&amp;', 'pässwörd/ünï ✓ 🎉', 'line1\nline2\r\ttab', "it's='x'", 'xoxb-1234/5678'];

/** Every character past ASCII and every special one as \uXXXX, in upper case hex: what some JSON writers emit. */
function unicodeEscapeAll(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    out +=
      c < 0x20 || c > 0x7e || '"\\<>&\''.includes(s[i]!) ? `\\u${c.toString(16).toUpperCase().padStart(4, '0')}` : s[i];
  }
  return `"${out}"`;
}

const encoders: Record<string, (s: string) => string> = {
  raw: (s) => s,
  'JSON.stringify': (s) => JSON.stringify(s),
  'Go json (template json)': (s) => marshalJSON(s),
  'unicode escapes (upper case)': unicodeEscapeAll,
  'unicode escapes (lower case)': (s) =>
    unicodeEscapeAll(s).replace(/\\u([0-9A-F]{4})/g, (_, h: string) => `\\u${h.toLowerCase()}`),
  'escaped slashes': (s) => JSON.stringify(s).replace(/\//g, '\\/'),
  'template escape then json': (s) => JSON.stringify(escapeMarkup(s)),
  'url query': (s) => JSON.stringify(encodeURIComponent(s)),
  'JSON inside a JSON string': (s) => JSON.stringify(JSON.stringify({ text: s })),
  hex: (s) => JSON.stringify(Buffer.from(s, 'utf8').toString('hex')),
};

describe('Redactor', () => {
  const redactor = new Redactor(SECRETS);

  for (const [name, encode] of Object.entries(encoders)) {
    it(`redacts every value written as ${name}, in single, array and ndjson bodies`, () => {
      const event = (i: number) =>
        `{"type":"x","data":{"id":"${i}","a":${encode(SECRETS[i % SECRETS.length]!)},"b":"keep me"}}`;
      const single = event(0);
      const array = `[${SECRETS.map((_, i) => event(i)).join(',')}]`;
      const ndjson = SECRETS.map((_, i) => `${event(i)}\n`).join('');
      for (const body of [single, array, ndjson]) {
        const shown = redactor.redact(body);
        expect(shown).toContain(REDACTED);
        expect(shown).toContain('keep me');
        for (const secret of SECRETS) {
          for (const form of Object.values(encoders)) expect(shown).not.toContain(form(secret).replace(/^"|"$/g, ''));
        }
      }
    });
  }

  it('finds a value whose characters are escaped in a mix of ways', () => {
    const body = '{"t":"tok\\"en\\u005cwith\\u003Cmarkup\\u003e\\u0026amp;"}';
    expect(new Redactor(['tok"en\\with<markup>&amp;']).redact(body)).toBe(`{"t":"${REDACTED}"}`);
  });

  it('finds a value whose line breaks ndjson packing removed', () => {
    expect(new Redactor(['12\n34']).redact('{"n":1234}\n')).toBe(`{"n":${REDACTED}}\n`);
  });

  it('leaves a body without secrets byte for byte as it was', () => {
    const body = '[{"a":"\\u00e9\\/x","b":"line\\nbreak"}, {"c" : 1.50}]\n';
    expect(redactor.redact(body)).toBe(body);
    expect(new Redactor([]).redact(body)).toBe(body);
    expect(new Redactor(['']).redact(body)).toBe(body);
  });

  it('keeps the JSON valid and the rest of a string when a value sits inside a longer one', () => {
    const body = JSON.stringify({ text: `Bearer ${SECRETS[0]} sent` });
    const shown = redactor.redact(body);
    expect(JSON.parse(shown)).toEqual({ text: `Bearer ${REDACTED} sent` });
  });

  it('replaces a value containing another value whole', () => {
    expect(new Redactor(['abcd', 'abcdefgh']).redact('"xabcdefghx"')).toBe(`"x${REDACTED}x"`);
  });

  it('finds a value of line breaks between two characters without backtracking, however many there are', () => {
    // Each line break may be printed raw, escaped or dropped (ndjson): as a regular expression, 2^n ways to try.
    const value = `x${'\n'.repeat(40)}y`;
    const redactor = new Redactor([value]);
    expect(redactor.redact(JSON.stringify({ v: value }))).toBe(`{"v":"${REDACTED}"}`);
    expect(redactor.redact(`{"v":"x${'\\n'.repeat(39)}z"}`)).toBe(`{"v":"x${'\\n'.repeat(39)}z"}`);
    expect(redactor.redact(`x${'\n'.repeat(10_000)}`)).toBe(`x${'\n'.repeat(10_000)}`);
  });

  it('redacts a body of the largest size under the largest set of values a webhook may hold', () => {
    // 50 variables and 50 header values of 4,096 characters (docs/webhooks.md, "Limits"), a body of 400 KB.
    const values = Array.from({ length: 100 }, (_, i) => `${i}:`.padEnd(4096, String.fromCharCode(97 + (i % 26))));
    const events = values.map((v, i) => ({
      i,
      v: i % 2 === 0 ? v : Buffer.from(v).toString('hex'),
      filler: 'é<"\\/>'.repeat(100),
    }));
    const body = JSON.stringify(events);
    expect(body.length).toBeGreaterThan(400_000);
    const shown = new Redactor(values).redact(body);
    expect(JSON.parse(shown)).toEqual(events.map((e) => ({ ...e, v: REDACTED })));
  });

  it('searches a body made of nothing but the starts of escapes in one pass each', () => {
    // `&` without `;`, `\\` before non-hex, `%` before a broken sequence: each looked at once, never to the body's end.
    const redactor = new Redactor(['sk_live_value']);
    for (const body of ['&'.repeat(1_000_000), '\\u00'.repeat(250_000), '%e2%'.repeat(250_000), 'a '.repeat(500_000)]) {
      expect(redactor.redact(`${body}sk_live_value`)).toBe(`${body}${REDACTED}`);
    }
  });

  it('withholds the body whole when its deadline passes, or when it is longer than any stored body', () => {
    const redactor = new Redactor(SECRETS);
    const body = JSON.stringify({ a: SECRETS[0], b: 'x'.repeat(200_000) });
    let checks = 0;
    expect(redactor.redact(body, { passed: () => ++checks > 3 })).toBe(REDACTION_WITHHELD);
    expect(redactor.redact('x'.repeat(MAX_REDACTED_BODY_LENGTH + 1))).toBe(REDACTION_WITHHELD);
    expect(redactor.redact(body)).toContain(REDACTED);
  });
});
