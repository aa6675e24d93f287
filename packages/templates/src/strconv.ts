// Go's strconv as the template engine needs it: float formatting (shortest and fixed precision, exact
// half-to-even rounding of the binary value), quoting, and literal parsing (ints with base prefixes and
// underscores, floats, quoted strings and characters).

import { fromBytes, runes, escapedByteValue } from './bytes';

/** Decimal digits of a float: value = 0.d × 10^dp; `d` has no leading or trailing zeros ("" for zero). */
interface Digits {
  d: string;
  dp: number;
}

const view = new DataView(new ArrayBuffer(8));

function floatBits(x: number): { neg: boolean; mant: bigint; exp: number } {
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const neg = bits >> 63n === 1n;
  let exp = Number((bits >> 52n) & 0x7ffn);
  let mant = bits & ((1n << 52n) - 1n);
  if (exp === 0) exp = 1;
  else mant |= 1n << 52n;
  // value = mant × 2^(exp - 1023 - 52)
  return { neg, mant, exp: exp - 1023 };
}

function shortestDigits(abs: number): Digits {
  if (abs === 0) return { d: '', dp: 0 };
  // toExponential() without an argument gives the shortest digits that round-trip, as Go's Ryu does.
  const s = abs.toExponential();
  const e = s.indexOf('e');
  const d = s.slice(0, e).replace('.', '');
  return { d: d.replace(/0+$/, ''), dp: Number(s.slice(e + 1)) + 1 };
}

function exactDigits(abs: number): Digits {
  if (abs === 0) return { d: '', dp: 0 };
  const { mant, exp } = floatBits(abs);
  const e2 = exp - 52;
  let d: string;
  let dp: number;
  if (e2 >= 0) {
    d = (mant << BigInt(e2)).toString();
    dp = d.length;
  } else {
    const k = -e2;
    d = (mant * 5n ** BigInt(k)).toString();
    dp = d.length - k;
  }
  return { d: d.replace(/0+$/, ''), dp };
}

/** Rounds to nd digits, half to even on an exact tie (Go's decimal.Round). */
function roundDigits(x: Digits, nd: number): Digits {
  if (nd < 0 || nd >= x.d.length) return x;
  const next = x.d.charCodeAt(nd) - 48;
  let up: boolean;
  if (next !== 5 || nd + 1 < x.d.length) up = next >= 5;
  else up = nd > 0 && (x.d.charCodeAt(nd - 1) - 48) % 2 === 1;
  if (!up) return { d: x.d.slice(0, nd).replace(/0+$/, ''), dp: x.dp };
  let i = nd - 1;
  while (i >= 0 && x.d[i] === '9') i--;
  if (i < 0) return { d: '1', dp: x.dp + 1 };
  return { d: x.d.slice(0, i) + String.fromCharCode(x.d.charCodeAt(i) + 1), dp: x.dp };
}

function digitAt(x: Digits, i: number): string {
  return i >= 0 && i < x.d.length ? (x.d[i] ?? '0') : '0';
}

function fmtE(neg: boolean, x: Digits, prec: number, fmt: string): string {
  let out = neg ? '-' : '';
  out += x.d.length > 0 ? x.d[0] : '0';
  if (prec > 0) {
    out += '.';
    for (let i = 1; i <= prec; i++) out += digitAt(x, i);
  }
  let exp = x.d.length === 0 ? 0 : x.dp - 1;
  const sign = exp < 0 ? '-' : '+';
  exp = Math.abs(exp);
  return out + fmt + sign + (exp < 10 ? '0' + exp : String(exp));
}

function fmtF(neg: boolean, x: Digits, prec: number): string {
  let out = neg ? '-' : '';
  if (x.dp > 0) {
    out += x.d.slice(0, x.dp);
    for (let m = Math.min(x.d.length, x.dp); m < x.dp; m++) out += '0';
  } else out += '0';
  if (prec > 0) {
    out += '.';
    for (let i = 0; i < prec; i++) out += digitAt(x, x.dp + i);
  }
  return out;
}

function fmtB(neg: boolean, mant: bigint, exp: number): string {
  const e = exp - 52;
  return (neg ? '-' : '') + mant.toString() + 'p' + (e >= 0 ? '+' : '') + String(e);
}

const MASK64 = (1n << 64n) - 1n;

function fmtX(neg: boolean, mantIn: bigint, expIn: number, prec: number, fmt: 'x' | 'X'): string {
  let mant = mantIn;
  let exp = expIn;
  if (mant === 0n) exp = 0;
  mant = (mant << 8n) & MASK64;
  while (mant !== 0n && (mant & (1n << 60n)) === 0n) {
    mant = (mant << 1n) & MASK64;
    exp--;
  }
  if (prec >= 0 && prec < 15) {
    const shift = BigInt(prec * 4);
    const extra = (mant << shift) & ((1n << 60n) - 1n);
    mant >>= 60n - shift;
    if ((extra | (mant & 1n)) > 1n << 59n) mant++;
    mant = (mant << (60n - shift)) & MASK64;
    if ((mant & (1n << 61n)) !== 0n) {
      mant >>= 1n;
      exp++;
    }
  }
  const hex = fmt === 'X' ? '0123456789ABCDEF' : '0123456789abcdef';
  let out = (neg ? '-' : '') + '0' + fmt + String(Number((mant >> 60n) & 1n));
  mant = (mant << 4n) & MASK64;
  if (prec < 0 && mant !== 0n) {
    out += '.';
    while (mant !== 0n) {
      out += hex[Number((mant >> 60n) & 15n)];
      mant = (mant << 4n) & MASK64;
    }
  } else if (prec > 0) {
    out += '.';
    for (let i = 0; i < prec; i++) {
      out += hex[Number((mant >> 60n) & 15n)];
      mant = (mant << 4n) & MASK64;
    }
  }
  out += fmt === 'X' ? 'P' : 'p';
  out += exp < 0 ? '-' : '+';
  const e = Math.abs(exp);
  return out + (e < 10 ? '0' + e : String(e));
}

export type FloatFormat = 'e' | 'E' | 'f' | 'g' | 'G' | 'b' | 'x' | 'X';

/** Go's strconv.FormatFloat(x, fmt, prec, 64); prec < 0 means the shortest exact representation. */
export function formatFloat(x: number, fmt: FloatFormat, precIn: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return '+Inf';
  if (x === -Infinity) return '-Inf';
  const neg = x < 0 || Object.is(x, -0);
  if (fmt === 'b' || fmt === 'x' || fmt === 'X') {
    const { mant, exp } = floatBits(x);
    return fmt === 'b' ? fmtB(neg, mant, exp) : fmtX(neg, mant, exp, precIn, fmt);
  }
  const abs = Math.abs(x);
  let prec = precIn;
  const shortest = prec < 0;
  let digs: Digits;
  if (shortest) {
    digs = shortestDigits(abs);
    if (fmt === 'e' || fmt === 'E') prec = Math.max(digs.d.length - 1, 0);
    else if (fmt === 'f') prec = Math.max(digs.d.length - digs.dp, 0);
    else prec = digs.d.length;
  } else if (fmt === 'f') {
    const exact = exactDigits(abs);
    digs = roundDigits(exact, exact.dp + prec);
  } else {
    let n = prec;
    if (fmt === 'e' || fmt === 'E') n++;
    else {
      if (prec === 0) prec = 1;
      n = prec;
    }
    digs = roundDigits(exactDigits(abs), n);
  }
  if (fmt === 'e' || fmt === 'E') return fmtE(neg, digs, prec, fmt);
  if (fmt === 'f') return fmtF(neg, digs, prec);
  let eprec = prec;
  if (eprec > digs.d.length && digs.d.length >= digs.dp) eprec = digs.d.length;
  if (shortest) eprec = 6;
  const exp = digs.dp - 1;
  if (exp < -4 || exp >= eprec) {
    if (prec > digs.d.length) prec = digs.d.length;
    return fmtE(neg, digs, prec - 1, fmt === 'g' ? 'e' : 'E');
  }
  if (prec > digs.dp) prec = digs.d.length;
  return fmtF(neg, digs, Math.max(prec - digs.dp, 0));
}

const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;

/** Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
export function isPrint(r: number): boolean {
  if (r < 0x80) return r >= 0x20 && r < 0x7f;
  if (r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) return false;
  return printable.test(String.fromCodePoint(r));
}

const lowerhex = '0123456789abcdef';

function hex2(b: number): string {
  return (lowerhex[b >> 4] ?? '0') + (lowerhex[b & 15] ?? '0');
}

function escapedRune(r: number, quote: string, asciiOnly: boolean): string {
  const ch = String.fromCodePoint(r);
  if (ch === quote || r === 0x5c) return '\\' + ch;
  if (asciiOnly) {
    if (r < 0x80 && isPrint(r)) return ch;
  } else if (isPrint(r)) return ch;
  switch (r) {
    case 7:
      return '\\a';
    case 8:
      return '\\b';
    case 12:
      return '\\f';
    case 10:
      return '\\n';
    case 13:
      return '\\r';
    case 9:
      return '\\t';
    case 11:
      return '\\v';
  }
  if (r < 0x20 || r === 0x7f) return '\\x' + hex2(r);
  let v = r;
  if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) v = 0xfffd;
  if (v < 0x10000) return '\\u' + v.toString(16).padStart(4, '0');
  return '\\U' + v.toString(16).padStart(8, '0');
}

/** Go's strconv.Quote, or QuoteToASCII when asciiOnly. */
export function quote(s: string, asciiOnly = false): string {
  let out = '"';
  for (const [r, text] of runes(s)) {
    if (r < 0) out += '\\x' + hex2(escapedByteValue(text));
    else out += escapedRune(r, '"', asciiOnly);
  }
  return out + '"';
}

/** Go's strconv.QuoteRune, or QuoteRuneToASCII when asciiOnly. */
export function quoteRune(rIn: number, asciiOnly = false): string {
  let r = rIn;
  if (r > 0x10ffff || r < 0 || (r >= 0xd800 && r <= 0xdfff)) r = 0xfffd;
  return "'" + escapedRune(r, "'", asciiOnly) + "'";
}

/** Go's strconv.CanBackquote. */
export function canBackquote(s: string): boolean {
  for (const [r] of runes(s)) {
    if (r < 0 || r === 0xfeff) return false;
    if ((r < 0x20 && r !== 9) || r === 0x60 || r === 0x7f) return false;
  }
  return true;
}

/** Go's strconv.ErrSyntax ("invalid syntax"). */
export class ErrSyntax extends Error {
  constructor() {
    super('invalid syntax');
  }
}

function hexVal(c: string): number {
  return /^[0-9a-fA-F]$/.test(c) ? parseInt(c, 16) : -1;
}

/** Go's strconv.UnquoteChar on a JavaScript string; returns the value, whether it is a rune, and the tail. */
export function unquoteChar(s: string, quoteChar: string): [value: number, multibyte: boolean, tail: string] {
  const c = s[0];
  if (c === undefined) throw new ErrSyntax();
  if (c === quoteChar && (quoteChar === "'" || quoteChar === '"')) throw new ErrSyntax();
  const cp = s.codePointAt(0) ?? 0;
  if (cp >= 0x80) {
    const w = cp > 0xffff ? 2 : 1;
    return [cp, true, s.slice(w)];
  }
  if (c !== '\\') return [cp, false, s.slice(1)];
  if (s.length <= 1) throw new ErrSyntax();
  const e = s[1] ?? '';
  let rest = s.slice(2);
  switch (e) {
    case 'a':
      return [7, false, rest];
    case 'b':
      return [8, false, rest];
    case 'f':
      return [12, false, rest];
    case 'n':
      return [10, false, rest];
    case 'r':
      return [13, false, rest];
    case 't':
      return [9, false, rest];
    case 'v':
      return [11, false, rest];
    case 'x':
    case 'u':
    case 'U': {
      const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      if (rest.length < n) throw new ErrSyntax();
      let v = 0;
      for (let j = 0; j < n; j++) {
        const x = hexVal(rest[j] ?? '');
        if (x < 0) throw new ErrSyntax();
        v = v * 16 + x;
      }
      rest = rest.slice(n);
      if (e === 'x') return [v, false, rest];
      if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) throw new ErrSyntax();
      return [v, true, rest];
    }
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7': {
      let v = e.charCodeAt(0) - 48;
      if (rest.length < 2) throw new ErrSyntax();
      for (let j = 0; j < 2; j++) {
        const x = (rest[j] ?? '').charCodeAt(0) - 48;
        if (!(x >= 0 && x <= 7)) throw new ErrSyntax();
        v = v * 8 + x;
      }
      if (v > 255) throw new ErrSyntax();
      return [v, false, rest.slice(2)];
    }
    case '\\':
      return [0x5c, false, rest];
    case "'":
    case '"':
      if (e !== quoteChar) throw new ErrSyntax();
      return [e.charCodeAt(0), false, rest];
    default:
      throw new ErrSyntax();
  }
}

/** Go's strconv.Unquote for "…" and `…` literals; a \x escape above 0x7f makes a raw byte. */
export function unquote(lit: string): string {
  const q = lit[0];
  if (lit.length < 2 || lit[lit.length - 1] !== q) throw new ErrSyntax();
  const body = lit.slice(1, -1);
  if (q === '`') {
    if (body.includes('`')) throw new ErrSyntax();
    return body.replace(/\r/g, '');
  }
  if (q !== '"') throw new ErrSyntax();
  if (!body.includes('\\') && !body.includes('"') && !body.includes('\n')) return body;
  const bytes: number[] = [];
  let rest = body;
  while (rest.length > 0) {
    const [v, multibyte, tail] = unquoteChar(rest, '"');
    rest = tail;
    if (!multibyte) bytes.push(v);
    else for (const b of Buffer.from(String.fromCodePoint(v), 'utf8')) bytes.push(b);
  }
  return fromBytes(Uint8Array.from(bytes));
}

function underscoreOK(sIn: string): boolean {
  let saw = '^';
  let i = 0;
  let s = sIn;
  if (s.length >= 1 && (s[0] === '-' || s[0] === '+')) s = s.slice(1);
  let hex = false;
  const p = (s[1] ?? '').toLowerCase();
  if (s.length >= 2 && s[0] === '0' && (p === 'b' || p === 'o' || p === 'x')) {
    i = 2;
    saw = '0';
    hex = p === 'x';
  }
  for (; i < s.length; i++) {
    const c = s[i] ?? '';
    const l = c.toLowerCase();
    if ((c >= '0' && c <= '9') || (hex && l >= 'a' && l <= 'f')) {
      saw = '0';
      continue;
    }
    if (c === '_') {
      if (saw !== '0') return false;
      saw = '_';
      continue;
    }
    if (saw === '_') return false;
    saw = '!';
  }
  return saw !== '_';
}

const UINT64_MAX = (1n << 64n) - 1n;

/** Go's strconv.ParseUint(s, 0, 64), or undefined on any error. */
export function parseUint(s: string): bigint | undefined {
  if (s.length === 0) return undefined;
  let base = 10;
  let body = s;
  if (s[0] === '0') {
    const p = (s[1] ?? '').toLowerCase();
    if (s.length >= 3 && p === 'b') [base, body] = [2, s.slice(2)];
    else if (s.length >= 3 && p === 'o') [base, body] = [8, s.slice(2)];
    else if (s.length >= 3 && p === 'x') [base, body] = [16, s.slice(2)];
    else [base, body] = [8, s.slice(1)];
  }
  if (body.includes('_')) {
    if (!underscoreOK(s)) return undefined;
    body = body.replace(/_/g, '');
  }
  if (body.length === 0) return base === 8 ? 0n : undefined;
  let v = 0n;
  const b = BigInt(base);
  for (const c of body.toLowerCase()) {
    const d = c >= '0' && c <= '9' ? c.charCodeAt(0) - 48 : c >= 'a' && c <= 'z' ? c.charCodeAt(0) - 87 : 99;
    if (d >= base) return undefined;
    v = v * b + BigInt(d);
    if (v > UINT64_MAX) return undefined;
  }
  return v;
}

/** Go's strconv.ParseInt(s, 0, 64), or undefined on any error. */
export function parseInt64(s: string): bigint | undefined {
  let neg = false;
  let body = s;
  if (s[0] === '+' || s[0] === '-') {
    neg = s[0] === '-';
    body = s.slice(1);
  }
  const u = parseUint(body);
  if (u === undefined) return undefined;
  if (!neg && u > (1n << 63n) - 1n) return undefined;
  if (neg && u > 1n << 63n) return undefined;
  return neg ? -u : u;
}

/** Go's strconv.ParseFloat(s, 64): undefined on a syntax error or on overflow. */
export function parseFloat64(s: string): number | undefined {
  let body = s;
  let neg = false;
  if (body[0] === '+' || body[0] === '-') {
    neg = body[0] === '-';
    body = body.slice(1);
  }
  if (body.includes('_')) {
    if (!underscoreOK(s)) return undefined;
    body = body.replace(/_/g, '');
  }
  let v: number;
  const hexm = /^0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?\d+)$/.exec(body);
  if (hexm) {
    const int = hexm[1] ?? '';
    const frac = hexm[2] ?? '';
    if (int.length + frac.length === 0) return undefined;
    const mant = BigInt('0x' + (int + frac || '0'));
    const exp = Number(hexm[3]) - 4 * frac.length;
    v = exp >= 0 ? Number(mant) * 2 ** exp : Number(mant) / 2 ** -exp;
    if (!Number.isFinite(v) && exp < 0) v = Number(mant) * 2 ** exp;
  } else {
    if (!/^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(body)) return undefined;
    v = Number(body);
  }
  if (!Number.isFinite(v)) return undefined;
  return neg ? -v : v;
}
