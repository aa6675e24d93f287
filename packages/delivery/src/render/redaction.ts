/**
 * Redaction of a delivery's body for the operator's view (CONTRACT 17): every occurrence of a secret value (the
 * webhook's variable values and custom header values) becomes `[redacted]`, whichever escaping a template gave it.
 *
 * A template can put a value into the body through `json` (Go's JSON: `\"`, `\\`, `\n`, `\u00XX`, `\u2028`), `js`
 * (`\'`, `\u003C`, `\u003D`), `html` and `escape` (`&lt;`, `&#34;`, `&#39;`), `urlquery` (`%XX`, `+`), `printf "%x"`
 * (hex of its bytes) or as it is; a JSON writer may also escape `/` as `\/` or any character as `\uXXXX`, in upper
 * or lower case hex. Packing into ndjson removes raw line breaks between tokens. Each secret therefore becomes one
 * regular expression whose every character matches any of its encodings, so a value whose characters are escaped
 * in a mix of ways is still found. A value nested one level deeper (a JSON document carried inside a JSON string,
 * as chat receivers' payloads do) is found by decoding every JSON string of the body and searching its contents
 * again, twice over; only a string that held a secret is re-encoded, so every other byte of the body stays as sent.
 *
 * Not found: a part of a value (a template that prints a slice or a `printf` precision of it) and transformations
 * no template function makes (base64, hashing).
 */
export const REDACTED = '[redacted]';

/** How deep JSON strings inside JSON strings are decoded and searched again. */
const NESTED_DEPTH = 2;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** A hexadecimal number, matched in either case and with any leading zeros a writer could add. */
function hexPattern(n: number, width: number): string {
  return [...n.toString(16).padStart(width, '0')].map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join('');
}

const SHORT_ESCAPES: Record<string, string[]> = {
  '"': ['\\"'],
  '\\': ['\\\\'],
  '/': ['\\/'],
  "'": ["\\'"],
  '\n': ['\\n', ''],
  '\r': ['\\r', ''],
  '\t': ['\\t'],
  '\b': ['\\b'],
  '\f': ['\\f'],
};
const NAMED_ENTITIES: Record<string, string[]> = {
  '&': ['&amp;'],
  '<': ['&lt;'],
  '>': ['&gt;'],
  '"': ['&quot;'],
  "'": ['&apos;'],
};

/** Every way one character (a code point) of a value can appear in a rendered body, as regular expression sources. */
function encodingsOf(char: string, lineBreaksMayVanish: boolean): string[] {
  const cp = char.codePointAt(0)!;
  const alternatives = [escapeRegExp(char)];
  // JSON and JavaScript \u escapes, one per UTF-16 unit (a pair of them for a character past U+FFFF).
  const units = [...Array(char.length).keys()].map((i) => char.charCodeAt(i));
  alternatives.push(units.map((u) => `\\\\u${hexPattern(u, 4)}`).join(''));
  for (const short of SHORT_ESCAPES[char] ?? []) if (short !== '' || lineBreaksMayVanish) alternatives.push(escapeRegExp(short));
  // HTML: named and numeric character references.
  for (const named of NAMED_ENTITIES[char] ?? []) alternatives.push(escapeRegExp(named));
  alternatives.push(`&#0*${cp};`, `&#[xX]0*${hexPattern(cp, 1)};`);
  // URL query encoding of its UTF-8 bytes.
  alternatives.push([...Buffer.from(char, 'utf8')].map((b) => `%${hexPattern(b, 2)}`).join(''));
  if (char === ' ') alternatives.push('\\+');
  return alternatives;
}

/** Values this short printed as hex are not looked for: every timestamp would match, and they reveal next to nothing. */
const MIN_HEX_BYTES = 4;

/** One regular expression matching a value in every encoding above (and in `printf "%x"`/`"% x"` hex). */
function secretPattern(value: string): string {
  // ndjson packing drops raw line breaks; a value made of nothing else must still match something.
  const lineBreaksMayVanish = /[^\r\n]/.test(value);
  const perChar = [...value].map((char) => `(?:${encodingsOf(char, lineBreaksMayVanish).join('|')})`).join('');
  const bytes = [...Buffer.from(value, 'utf8')];
  if (bytes.length < MIN_HEX_BYTES) return perChar;
  const hex = (separator: string) => bytes.map((b) => hexPattern(b, 2)).join(separator);
  return `${perChar}|${hex('')}|${hex(' ')}`;
}

/** Replaces secret values in bodies; built once per webhook's set of values. */
export class Redactor {
  private readonly pattern: RegExp | null;

  constructor(values: Iterable<string>) {
    // Longest first, so that a value containing another is replaced whole.
    const distinct = [...new Set([...values].filter((v) => v.length > 0))].sort((a, b) => b.length - a.length);
    this.pattern = distinct.length === 0 ? null : new RegExp(distinct.map(secretPattern).join('|'), 'g');
  }

  /** The body with every secret value replaced by `[redacted]`; the same string when it held none. */
  redact(body: string): string {
    return this.redactAt(body, 0);
  }

  private redactAt(text: string, depth: number): string {
    if (this.pattern === null) return text;
    const flat = text.replace(this.pattern, REDACTED);
    if (depth >= NESTED_DEPTH) return flat;
    return flat.replace(/"(?:[^"\\\r\n]|\\.)*"/g, (token) => {
      let decoded: unknown;
      try {
        decoded = JSON.parse(token);
      } catch {
        return token;
      }
      if (typeof decoded !== 'string') return token;
      const redacted = this.redactAt(decoded, depth + 1);
      return redacted === decoded ? token : JSON.stringify(redacted);
    });
  }
}
