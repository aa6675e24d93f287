import { marshalJSON } from '@gatehook/templates/json';
import { escapeMarkup } from '@gatehook/templates/gatehook-funcs';
import { REDACTED, Redactor } from './redaction';

// Values whose escaping matters: quotes, backslashes, markup, non-ASCII (BMP and astral), line breaks, slashes.
const SECRETS = ['tok"en\\with<markup>&amp;', 'pässwörd/ünï ✓ 🎉', 'line1\nline2\r\ttab', "it's='x'", 'xoxb-1234/5678'];

/** Every character past ASCII and every special one as \uXXXX, in upper case hex: what some JSON writers emit. */
function unicodeEscapeAll(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    out += c < 0x20 || c > 0x7e || '"\\<>&\''.includes(s[i]!) ? `\\u${c.toString(16).toUpperCase().padStart(4, '0')}` : s[i];
  }
  return `"${out}"`;
}

const encoders: Record<string, (s: string) => string> = {
  raw: (s) => s,
  'JSON.stringify': (s) => JSON.stringify(s),
  'Go json (template json)': (s) => marshalJSON(s),
  'unicode escapes (upper case)': unicodeEscapeAll,
  'unicode escapes (lower case)': (s) => unicodeEscapeAll(s).replace(/\\u([0-9A-F]{4})/g, (_, h: string) => `\\u${h.toLowerCase()}`),
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
      const event = (i: number) => `{"type":"x","data":{"id":"${i}","a":${encode(SECRETS[i % SECRETS.length]!)},"b":"keep me"}}`;
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
});
