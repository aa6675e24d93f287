// Go strings are byte sequences; ours are JavaScript strings. Slicing a string mid-character (`slice`,
// `index`) must still behave as Go's bytes do, so a byte that is not part of valid UTF-8 is carried as a
// lone low surrogate U+DC80..U+DCFF ("surrogate escape"). Valid text never contains lone surrogates, so the
// escapes are unambiguous, and concatenating the pieces of a split character restores it (normalizeBytes).

const ESCAPE_BASE = 0xdc00;
const escapedByte = /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/;
const nonAscii = /[^\x00-\x7f]/;

/** Whether the string carries raw (invalid UTF-8) bytes as surrogate escapes. */
export function hasByteEscapes(s: string): boolean {
  return escapedByte.test(s);
}

function isEscape(s: string, i: number, c: number): boolean {
  if (c < 0xdc80 || c > 0xdcff) return false;
  if (i === 0) return true;
  const prev = s.charCodeAt(i - 1);
  return prev < 0xd800 || prev > 0xdbff;
}

/** Length of the string in Go bytes (UTF-8, escapes count one byte each). */
export function byteLength(s: string): number {
  if (!nonAscii.test(s)) return s.length;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1))) {
      n += 4;
      i++;
    } else if (isEscape(s, i, c)) n += 1;
    else n += 3;
  }
  return n;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** The Go bytes of a string. A lone surrogate that is not an escape becomes U+FFFD, as Go's decoder would. */
export function toBytes(s: string): Uint8Array {
  const out = new Uint8Array(byteLength(s));
  let o = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      out[o++] = c;
      continue;
    }
    if (c < 0x800) {
      out[o++] = 0xc0 | (c >> 6);
      out[o++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1))) {
      const cp = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(i + 1) - 0xdc00);
      i++;
      out[o++] = 0xf0 | (cp >> 18);
      out[o++] = 0x80 | ((cp >> 12) & 0x3f);
      out[o++] = 0x80 | ((cp >> 6) & 0x3f);
      out[o++] = 0x80 | (cp & 0x3f);
      continue;
    }
    if (isEscape(s, i, c)) {
      out[o++] = c - ESCAPE_BASE;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    out[o++] = 0xe0 | (c >> 12);
    out[o++] = 0x80 | ((c >> 6) & 0x3f);
    out[o++] = 0x80 | (c & 0x3f);
  }
  return out;
}

/**
 * Decodes one rune at `i` as Go's utf8.DecodeRune does: an invalid or truncated sequence yields
 * (-1, 1) so the caller handles that single byte.
 */
function decodeRune(b: Uint8Array, i: number): [rune: number, size: number] {
  const c0 = b[i] ?? 0;
  if (c0 < 0x80) return [c0, 1];
  const need = c0 >= 0xf0 && c0 <= 0xf4 ? 3 : c0 >= 0xe0 ? (c0 <= 0xef ? 2 : -1) : c0 >= 0xc2 ? 1 : -1;
  if (need < 0 || i + need > b.length - 1) return [-1, 1];
  const c1 = b[i + 1] ?? 0;
  let lo = 0x80;
  let hi = 0xbf;
  if (c0 === 0xe0) lo = 0xa0;
  else if (c0 === 0xed) hi = 0x9f;
  else if (c0 === 0xf0) lo = 0x90;
  else if (c0 === 0xf4) hi = 0x8f;
  if (c1 < lo || c1 > hi) return [-1, 1];
  if (need === 1) return [((c0 & 0x1f) << 6) | (c1 & 0x3f), 2];
  const c2 = b[i + 2] ?? 0;
  if (c2 < 0x80 || c2 > 0xbf) return [-1, 1];
  if (need === 2) return [((c0 & 0x0f) << 12) | ((c1 & 0x3f) << 6) | (c2 & 0x3f), 3];
  const c3 = b[i + 3] ?? 0;
  if (c3 < 0x80 || c3 > 0xbf) return [-1, 1];
  return [((c0 & 0x07) << 18) | ((c1 & 0x3f) << 12) | ((c2 & 0x3f) << 6) | (c3 & 0x3f), 4];
}

/** Turns Go bytes back into our string form, escaping every byte that is not valid UTF-8. */
export function fromBytes(b: Uint8Array): string {
  let out = '';
  let run = 0;
  let i = 0;
  while (i < b.length) {
    const c = b[i] ?? 0;
    if (c < 0x80) {
      i++;
      continue;
    }
    const [r, size] = decodeRune(b, i);
    if (r >= 0) {
      i += size;
      continue;
    }
    out += Buffer.from(b.subarray(run, i)).toString('utf8') + String.fromCharCode(ESCAPE_BASE + c);
    i++;
    run = i;
  }
  return out + Buffer.from(b.subarray(run)).toString('utf8');
}

/** Re-reads a string whose escapes may, once adjacent, form valid UTF-8 again. */
export function normalizeBytes(s: string): string {
  return hasByteEscapes(s) ? fromBytes(toBytes(s)) : s;
}

/** The final text of an output: raw bytes that are still invalid become U+FFFD, one per byte. */
export function toValidText(s: string): string {
  if (!hasByteEscapes(s)) return s;
  return normalizeBytes(s).replace(/(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/g, '\uFFFD');
}

/** Go's s[i:j] on bytes. */
export function sliceBytes(s: string, i: number, j: number): string {
  if (!nonAscii.test(s)) return s.slice(i, j);
  return fromBytes(toBytes(s).subarray(i, j));
}

/** Go's s[i]: one byte. */
export function byteAt(s: string, i: number): number {
  if (!nonAscii.test(s)) return s.charCodeAt(i);
  return toBytes(s)[i] ?? 0;
}

/** Number of runes as Go's utf8.RuneCountInString counts them (each invalid byte is one rune). */
export function runeCount(s: string): number {
  if (!nonAscii.test(s)) return s.length;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1))) i++;
    n++;
  }
  return n;
}

/** Go's bytewise string order, which for valid text is code point order (not UTF-16 order). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0xd800 && y < 0xd800) return x - y;
    const bx = toBytes(a.slice(i));
    const by = toBytes(b.slice(i));
    const m = Math.min(bx.length, by.length);
    for (let k = 0; k < m; k++) {
      const d = (bx[k] ?? 0) - (by[k] ?? 0);
      if (d !== 0) return d;
    }
    return bx.length - by.length;
  }
  return a.length - b.length;
}

/** Iterates the runes of a string as Go's `for range` does; an escaped byte yields rune -1 (RuneError). */
export function* runes(s: string): Generator<[rune: number, text: string]> {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1))) {
      yield [0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(i + 1) - 0xdc00), s.slice(i, i + 2)];
      i++;
    } else if (isEscape(s, i, c)) {
      yield [-1, s[i] ?? ''];
    } else if (c >= 0xd800 && c <= 0xdfff) {
      yield [0xfffd, '\uFFFD'];
    } else {
      yield [c, s[i] ?? ''];
    }
  }
}

/** The escaped byte value of a rune -1 entry produced by runes(). */
export function escapedByteValue(text: string): number {
  return text.charCodeAt(0) - ESCAPE_BASE;
}
