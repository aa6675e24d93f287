// Go's json.Marshal of the data model, with SetEscapeHTML(false): map keys sorted bytewise, Go's float
// format (shortest digits, exponent only below 1e-6 or from 1e21), \u00XX for control characters
// (Go 1.19 has no \b or \f shorthand), U+2028/U+2029 escaped, invalid UTF-8 as \ufffd.

import { checkDeadline, checkSize } from './budget';
import { compareStrings, runes } from './bytes';
import { FuncError } from './errors';
import { formatFloat } from './strconv';
import { kindOf, mapGet, mapKeys, typeName, Uint8, type GoMap } from './values';

const hex = '0123456789abcdef';

const needsEscape = /["\\\x00-\x1f\u2028\u2029\ud800-\udfff]/;

function encodeString(s: string): string {
  checkSize('input', s.length);
  if (!needsEscape.test(s)) return '"' + s + '"';
  let out = '"';
  let start = 0;
  const flush = (i: number): void => {
    if (i > start) out += s.slice(start, i);
  };
  let i = 0;
  for (const [r, text] of runes(s)) {
    let rep: string | undefined;
    if (r === 0x22) rep = '\\"';
    else if (r === 0x5c) rep = '\\\\';
    else if (r === 0x0a) rep = '\\n';
    else if (r === 0x0d) rep = '\\r';
    else if (r === 0x09) rep = '\\t';
    else if (r >= 0 && r < 0x20) rep = '\\u00' + hex[r >> 4] + hex[r & 15];
    else if (r < 0 || (r === 0xfffd && s.charCodeAt(i) !== 0xfffd)) rep = '\\ufffd';
    else if (r === 0x2028 || r === 0x2029) rep = '\\u202' + hex[r & 15];
    if (rep !== undefined) {
      flush(i);
      out += rep;
      start = i + text.length;
    }
    i += text.length;
  }
  flush(i);
  return out + '"';
}

/** Go's float64 JSON encoding. */
export function encodeFloat(f: number): string {
  if (!Number.isFinite(f)) throw new FuncError(`json: unsupported value: ${formatFloat(f, 'g', -1)}`);
  const abs = Math.abs(f);
  const fmt = abs !== 0 && (abs < 1e-6 || abs >= 1e21) ? 'e' : 'f';
  let s = formatFloat(f, fmt, -1);
  if (fmt === 'e') s = s.replace(/e-0(\d)$/, 'e-$1');
  return s;
}

/** The JSON text of a template value, exactly as Go's json.Marshal writes it. */
export function marshalJSON(v: unknown): string {
  switch (kindOf(v)) {
    case 'invalid':
    case 'nil':
      return 'null';
    case 'string':
      return encodeString(v as string);
    case 'float':
      return encodeFloat(v as number);
    case 'int':
      return (v as bigint).toString();
    case 'uint':
      return String((v as Uint8).value);
    case 'bool':
      return v ? 'true' : 'false';
    case 'slice':
      checkDeadline();
      return '[' + (v as readonly unknown[]).map((e) => marshalJSON(e ?? null)).join(',') + ']';
    case 'map': {
      checkDeadline();
      const m = v as GoMap;
      const keys = mapKeys(m).sort(compareStrings);
      return '{' + keys.map((k) => encodeString(k) + ':' + marshalJSON(mapGet(m, k))).join(',') + '}';
    }
    default:
      throw new FuncError(`json: unsupported type: ${typeName(v)}`);
  }
}
