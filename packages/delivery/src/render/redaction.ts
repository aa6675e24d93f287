import type { Deadline } from '@gatehook/core/cpu-deadline';
import { MAX_BODY_BYTES } from './bodies';

/**
 * Redaction of a delivery's body for the operator's view (CONTRACT 17): every occurrence of a secret value (the
 * webhook's variable values and custom header values) becomes `[redacted]`, whichever escaping a template gave it.
 *
 * A template can put a value into the body through `json` (Go's JSON: `\"`, `\\`, `\n`, `\u00XX`, `\u2028`), `js`
 * (`\'`, `\u003C`, `\u003D`), `html` and `escape` (`&lt;`, `&#34;`, `&#39;`), `urlquery` (`%XX`, `+`), `printf "%x"`
 * (hex of its bytes) or as it is; a JSON writer may also escape `/` as `\/` or any character as `\uXXXX`, in upper
 * or lower case hex. Packing into ndjson removes raw line breaks between tokens.
 *
 * The search is literal and linear: the body is decoded a fixed number of ways, each one pass that keeps, for every
 * decoded character, where its escape began in the body (JSON and JavaScript escapes; HTML character references; URL
 * query escapes; all three at once, so a value whose characters are escaped in a mix of ways is still found; JSON
 * escapes twice over and all three twice over, for a value inside a JSON document carried in a JSON string, as chat
 * receivers' payloads are; hex digits in lower case with the spaces between them dropped). Each value is then looked
 * for with `indexOf` in each decoded text, and every place found, mapped back to the body, becomes `[redacted]`.
 * Every other byte of the body stays as sent; a replaced place covers whole escapes, so a JSON body stays valid.
 * No value ever becomes a regular expression: nothing a tenant writes can make the search backtrack.
 *
 * The work is bounded: at most {@link MAX_REDACTED_BODY_LENGTH} characters of body, the decodings above, and one
 * `indexOf` per value form and decoding, under a {@link Deadline} checked between them. A body past either bound is
 * withheld whole ({@link REDACTION_WITHHELD}) rather than shown unsearched.
 *
 * Not found: a part of a value (a template that prints a slice or a `printf` precision of it), transformations no
 * template function makes (base64, hashing), and a value that itself contains text shaped like an escape when the
 * template printed it through two different escapings at once.
 */
export const REDACTED = '[redacted]';

/** The body shown when it could not be searched within its bounds: withheld whole, never shown unsearched. */
export const REDACTION_WITHHELD =
  '[redacted: the body could not be searched for secret values within the redaction budget]';

/** Longest body searched (UTF-16 units): a stored body is at most MAX_BODY_BYTES, so this is never reached by one. */
export const MAX_REDACTED_BODY_LENGTH = MAX_BODY_BYTES;

/**
 * CPU time one request view may spend redacting (ms). The 50 variables and 50 header values of 4,096 characters a
 * webhook may hold and a 1 MiB body take a fraction of it; past it the body is withheld.
 */
export const REDACTION_BUDGET_MS = 1_000;

/** Values this short printed as hex are not looked for: every timestamp would match, and they reveal next to nothing. */
const MIN_HEX_BYTES = 4;

/** How often (in characters) a decoder looks at its deadline. */
const DEADLINE_EVERY_CHARS = 65_536;

/** A decoded text, and where each of its UTF-16 units began in the body (`starts[length]` is the body's length). */
interface Decoded {
  text: string;
  /** Null: the identity (the body itself). */
  starts: Int32Array | null;
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  "'": "'",
  n: '\n',
  r: '\r',
  t: '\t',
  b: '\b',
  f: '\f',
};
const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
const hexValue = (c: number) => (c <= 57 ? c - 48 : (c | 0x20) - 87);

/** The escapes a decoder undoes. */
interface Escapes {
  json: boolean;
  html: boolean;
  url: boolean;
  /** `+` as a space (URL query encoding alone: a `+` in a value written as JSON is a `+`). */
  plus: boolean;
}

/** One escape at `i`, decoded: its text and the body characters it takes; null when `i` starts none. */
type Token = { text: string; length: number } | null;

function jsonEscape(s: string, i: number): Token {
  const next = s[i + 1];
  if (next === undefined) return null;
  if (next === 'u') {
    if (i + 6 > s.length) return null;
    let unit = 0;
    for (let k = i + 2; k < i + 6; k++) {
      const c = s.charCodeAt(k);
      if (!isHex(c)) return null;
      unit = unit * 16 + hexValue(c);
    }
    return { text: String.fromCharCode(unit), length: 6 };
  }
  const short = SHORT_ESCAPES[next];
  return short === undefined ? null : { text: short, length: 2 };
}

/** Longest numeric character reference read (`&#x0010FFFF;` and leading zeros a writer may add). */
const MAX_REFERENCE_DIGITS = 10;

function htmlReference(s: string, i: number): Token {
  // Within the longest reference only: a search to the end of the body from every `&` would be quadratic.
  const window = s.slice(i + 1, i + MAX_REFERENCE_DIGITS + 4);
  const semicolon = window.indexOf(';');
  if (semicolon === -1) return null;
  const end = i + 1 + semicolon;
  const name = window.slice(0, semicolon);
  const named = NAMED_ENTITIES[name];
  if (named !== undefined) return { text: named, length: end - i + 1 };
  const numeric = /^#(?:([0-9]+)|[xX]([0-9a-fA-F]+))$/.exec(name);
  if (!numeric) return null;
  const cp = numeric[1] !== undefined ? Number.parseInt(numeric[1], 10) : Number.parseInt(numeric[2]!, 16);
  if (cp > 0x10ffff) return null;
  return { text: String.fromCodePoint(cp), length: end - i + 1 };
}

/** One character of %XX escapes of its UTF-8 bytes (one to four of them). */
function urlEscape(s: string, i: number): Token {
  const byteAt = (at: number) =>
    at + 3 <= s.length && s[at] === '%' && isHex(s.charCodeAt(at + 1)) && isHex(s.charCodeAt(at + 2))
      ? hexValue(s.charCodeAt(at + 1)) * 16 + hexValue(s.charCodeAt(at + 2))
      : -1;
  const lead = byteAt(i);
  if (lead < 0) return null;
  const count =
    lead < 0x80
      ? 1
      : lead >= 0xc2 && lead < 0xe0
        ? 2
        : lead >= 0xe0 && lead < 0xf0
          ? 3
          : lead >= 0xf0 && lead < 0xf5
            ? 4
            : 0;
  if (count === 0) return null;
  const bytes = [lead];
  for (let k = 1; k < count; k++) {
    const b = byteAt(i + 3 * k);
    if (b < 0x80 || b > 0xbf) return null;
    bytes.push(b);
  }
  const text = Buffer.from(bytes).toString('utf8');
  return text.includes('\ufffd') ? null : { text, length: 3 * count };
}

/** The characters an escape of these kinds starts with, as a global pattern (a character class: no backtracking). */
function escapeStarts(escapes: Escapes): RegExp {
  const chars = `${escapes.json ? '\\\\' : ''}${escapes.html ? '&' : ''}${escapes.url ? '%' : ''}${escapes.plus ? '+' : ''}`;
  return new RegExp(`[${chars}]`, 'g');
}

/** One escape of these kinds at `i` (which holds one of their start characters), decoded; null when none is. */
function escapeAt(s: string, i: number, escapes: Escapes): Token {
  const c = s[i];
  if (c === '\\') return escapes.json ? jsonEscape(s, i) : null;
  if (c === '&') return escapes.html ? htmlReference(s, i) : null;
  if (c === '%') return escapes.url ? urlEscape(s, i) : null;
  return c === '+' && escapes.plus ? { text: ' ', length: 1 } : null;
}

/**
 * Decodes `s` in one pass; null when it holds no escape of these kinds (the decoding is `s` itself). The text
 * between two escapes is copied whole, so the cost is a pattern search for their start characters plus the escapes.
 */
function decode(s: string, escapes: Escapes, deadline: Deadline): Decoded | null {
  const pattern = escapeStarts(escapes);
  let match = pattern.exec(s);
  if (match === null) return null;
  const starts = new Int32Array(s.length + 1);
  const out: string[] = [];
  let length = 0;
  let copied = 0;
  let changed = false;
  let checkAt = DEADLINE_EVERY_CHARS;
  const copy = (to: number) => {
    if (to <= copied) return;
    out.push(s.slice(copied, to));
    for (let k = copied; k < to; k++) starts[length++] = k;
    copied = to;
  };
  while (match !== null) {
    const i = match.index;
    if (i >= checkAt) {
      if (deadline.passed()) throw new BudgetSpent();
      checkAt = i + DEADLINE_EVERY_CHARS;
    }
    copy(i);
    const token = escapeAt(s, i, escapes);
    if (token === null) {
      copy(i + 1);
    } else {
      changed = true;
      out.push(token.text);
      // Every unit of a decoded character starts where its escape did.
      for (let k = 0; k < token.text.length; k++) starts[length++] = i;
      copied = i + token.length;
    }
    pattern.lastIndex = copied;
    match = pattern.exec(s);
  }
  if (!changed) return null;
  copy(s.length);
  starts[length] = s.length;
  return { text: out.join(''), starts: starts.subarray(0, length + 1) };
}

/** Hex digits in lower case, a space between two of them dropped: what `printf "%x"` and `"% x"` print, in one form. */
function compactHex(s: string, deadline: Deadline): Decoded {
  // Same length: upper-case hex digits in lower case.
  const lower = s.replace(/[A-F]+/g, (run) => run.toLowerCase());
  if (deadline.passed()) throw new BudgetSpent();
  const starts = new Int32Array(s.length + 1);
  const out: string[] = [];
  let length = 0;
  let copied = 0;
  const spaces = /(?<=[0-9a-f]) (?=[0-9a-f])/g;
  for (let match = spaces.exec(lower); match !== null; match = spaces.exec(lower)) {
    out.push(lower.slice(copied, match.index));
    for (let k = copied; k < match.index; k++) starts[length++] = k;
    copied = match.index + 1;
  }
  out.push(lower.slice(copied));
  for (let k = copied; k < s.length; k++) starts[length++] = k;
  starts[length] = s.length;
  return { text: out.join(''), starts: starts.subarray(0, length + 1) };
}

/** `outer` applied to the text of `inner`, its positions mapped back to the body. */
function compose(inner: Decoded, outer: Decoded | null): Decoded | null {
  if (outer === null || inner.starts === null || outer.starts === null) return outer;
  const starts = new Int32Array(outer.starts.length);
  for (let i = 0; i < starts.length; i++) starts[i] = inner.starts[outer.starts[i]!]!;
  return { text: outer.text, starts };
}

class BudgetSpent extends Error {}

const JSON_ONLY: Escapes = { json: true, html: false, url: false, plus: false };
const HTML_ONLY: Escapes = { json: false, html: true, url: false, plus: false };
const URL_QUERY: Escapes = { json: false, html: false, url: true, plus: true };
const EVERY_ESCAPE: Escapes = { json: true, html: true, url: true, plus: false };

/** The forms of a value looked for in decoded text: itself, and without line breaks (ndjson packing drops them). */
function textForms(value: string): string[] {
  const stripped = value.replace(/[\r\n]/g, '');
  return stripped !== value && stripped !== '' ? [value, stripped] : [value];
}

/** The hex a template prints of a value's UTF-8 bytes, in lower case; none for a value of fewer than MIN_HEX_BYTES. */
function hexForm(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  return bytes.length < MIN_HEX_BYTES ? [] : [bytes.toString('hex')];
}

/** Replaces secret values in bodies; made once per set of values (a version of a webhook's secrets). */
export class Redactor {
  private readonly texts: string[];
  private readonly hexes: string[];

  constructor(values: Iterable<string>) {
    const distinct = [...new Set([...values].filter((v) => v.length > 0))];
    this.texts = [...new Set(distinct.flatMap(textForms))];
    this.hexes = [...new Set(distinct.flatMap(hexForm))];
  }

  /** Characters of the forms it looks for (what it holds in memory). */
  get size(): number {
    return this.texts.reduce((n, t) => n + t.length, 0) + this.hexes.reduce((n, t) => n + t.length, 0);
  }

  /**
   * The body with every secret value replaced by `[redacted]` (the same string when it held none), or
   * {@link REDACTION_WITHHELD} when the body is longer than {@link MAX_REDACTED_BODY_LENGTH} or `deadline` passed
   * before the search ended.
   */
  redact(body: string, deadline: Deadline = { passed: () => false }): string {
    if (this.texts.length === 0) return body;
    if (body.length > MAX_REDACTED_BODY_LENGTH) return REDACTION_WITHHELD;
    try {
      return this.search(body, deadline);
    } catch (error) {
      if (error instanceof BudgetSpent) return REDACTION_WITHHELD;
      throw error;
    }
  }

  private search(body: string, deadline: Deadline): string {
    const found: number[] = [];
    const searched: string[] = [];
    const look = (decoded: Decoded | null, needles: readonly string[]) => {
      // A decoding that changed nothing, or gave a text already searched, finds nothing new.
      if (decoded === null) return;
      if (needles === this.texts) {
        if (searched.includes(decoded.text)) return;
        searched.push(decoded.text);
      }
      for (const needle of needles) {
        if (deadline.passed()) throw new BudgetSpent();
        const { text, starts } = decoded;
        for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
          const end = at + needle.length;
          found.push(starts === null ? at : starts[at]!, starts === null ? end : starts[end]!);
        }
      }
    };
    look({ text: body, starts: null }, this.texts);
    const json = decode(body, JSON_ONLY, deadline);
    look(json, this.texts);
    if (json !== null) look(compose(json, decode(json.text, JSON_ONLY, deadline)), this.texts);
    look(decode(body, HTML_ONLY, deadline), this.texts);
    look(decode(body, URL_QUERY, deadline), this.texts);
    const every = decode(body, EVERY_ESCAPE, deadline);
    look(every, this.texts);
    if (every !== null) look(compose(every, decode(every.text, EVERY_ESCAPE, deadline)), this.texts);
    if (this.hexes.length > 0) look(compactHex(body, deadline), this.hexes);
    return replaceSpans(body, found);
  }
}

/** `body` with each span of `found` (pairs of start and end) replaced by `[redacted]`, overlapping spans as one. */
function replaceSpans(body: string, found: number[]): string {
  if (found.length === 0) return body;
  const spans: [number, number][] = [];
  for (let i = 0; i < found.length; i += 2) spans.push([found[i]!, found[i + 1]!]);
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const out: string[] = [];
  let copied = 0;
  for (const [start, end] of spans) {
    if (end <= copied) continue;
    if (start >= copied) {
      out.push(body.slice(copied, start), REDACTED);
    }
    // A span overlapping the previous one extends it: the previous `[redacted]` covers it.
    copied = end;
  }
  out.push(body.slice(copied));
  return out.join('');
}
