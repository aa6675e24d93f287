// Go's fmt.Sprint, Sprintln and Sprintf over the template data model (see values.ts), including Go's
// in-band error text: %!d(string=x), %!d(MISSING), %!(EXTRA …), %!(NOVERB), %!(BADWIDTH) and friends.

import { checkDeadline, LimitExceeded, MAX_PRINTF_WIDTH, maxString } from './budget';
import { compareStrings, normalizeBytes, runeCount, runes, toBytes } from './bytes';
import { canBackquote, formatFloat, isPrint, quote, quoteRune, type FloatFormat } from './strconv';
import { kindOf, mapGet, mapKeys, typeName, Uint8, type GoMap } from './values';

const ldigits = '0123456789abcdefx';
const udigits = '0123456789ABCDEFX';

/** Flags of one verb, cleared before each. */
class Flags {
  widPresent = false;
  precPresent = false;
  minus = false;
  plus = false;
  sharp = false;
  space = false;
  zero = false;
  sharpV = false;
  wid = 0;
  prec = 0;
}

function isNilArg(a: unknown): boolean {
  return a === null || a === undefined;
}

class Printer {
  buf = '';
  f = new Flags();
  erroring = false;
  // Go's badVerb names the top-level argument's type, or the nested value's once inside a container.
  arg: unknown = undefined;
  value: unknown = undefined;
  hasValue = false;

  clearFlags(): void {
    this.f = new Flags();
  }

  writePadding(n: number): void {
    if (n <= 0) return;
    this.buf += (this.f.zero ? '0' : ' ').repeat(n);
  }

  padString(s: string): void {
    if (!this.f.widPresent || this.f.wid === 0) {
      this.buf += s;
      return;
    }
    const width = this.f.wid - runeCount(s);
    if (!this.f.minus) {
      this.writePadding(width);
      this.buf += s;
    } else {
      this.buf += s;
      this.writePadding(width);
    }
  }

  fmtBoolean(v: boolean): void {
    this.padString(v ? 'true' : 'false');
  }

  fmtUnicode(u: bigint): void {
    let prec = 4;
    if (this.f.precPresent && this.f.prec > 4) prec = this.f.prec;
    let s = u.toString(16).toUpperCase();
    if (s.length < prec) s = '0'.repeat(prec - s.length) + s;
    s = 'U+' + s;
    if (this.f.sharp && u <= 0x10ffffn && isPrint(Number(u))) s += " '" + String.fromCodePoint(Number(u)) + "'";
    const oldZero = this.f.zero;
    this.f.zero = false;
    this.padString(s);
    this.f.zero = oldZero;
  }

  fmtInteger(uIn: bigint, base: number, isSigned: boolean, verb: string, digits: string): void {
    const negative = isSigned && uIn < 0n;
    const u = negative ? -uIn : uIn;
    let prec = 0;
    if (this.f.precPresent) {
      prec = this.f.prec;
      if (prec === 0 && u === 0n) {
        const oldZero = this.f.zero;
        this.f.zero = false;
        this.writePadding(this.f.wid);
        this.f.zero = oldZero;
        return;
      }
    } else if (this.f.zero && this.f.widPresent) {
      prec = this.f.wid;
      if (negative || this.f.plus || this.f.space) prec--;
    }
    let s = u.toString(base);
    if (digits === udigits) s = s.toUpperCase();
    if (s.length < prec) s = '0'.repeat(prec - s.length) + s;
    if (this.f.sharp) {
      if (base === 2) s = '0b' + s;
      else if (base === 8) {
        if (s[0] !== '0') s = '0' + s;
      } else if (base === 16) s = '0' + (digits[16] ?? 'x') + s;
    }
    if (verb === 'O') s = '0o' + s;
    if (negative) s = '-' + s;
    else if (this.f.plus) s = '+' + s;
    else if (this.f.space) s = ' ' + s;
    const oldZero = this.f.zero;
    this.f.zero = false;
    this.padString(s);
    this.f.zero = oldZero;
  }

  truncateString(s: string): string {
    if (!this.f.precPresent) return s;
    let n = this.f.prec;
    let i = 0;
    for (const [, text] of runes(s)) {
      n--;
      if (n < 0) return s.slice(0, i);
      i += text.length;
    }
    return s;
  }

  fmtS(s: string): void {
    this.padString(this.truncateString(s));
  }

  fmtSx(s: string, digits: string): void {
    const b = toBytes(s);
    let length = b.length;
    if (this.f.precPresent && this.f.prec < length) length = this.f.prec;
    let width = 2 * length;
    if (width > 0) {
      if (this.f.space) {
        if (this.f.sharp) width *= 2;
        width += length - 1;
      } else if (this.f.sharp) width += 2;
    } else {
      if (this.f.widPresent) this.writePadding(this.f.wid);
      return;
    }
    if (this.f.widPresent && this.f.wid > width && !this.f.minus) this.writePadding(this.f.wid - width);
    let out = '';
    if (this.f.sharp) out += '0' + (digits[16] ?? 'x');
    for (let i = 0; i < length; i++) {
      if (this.f.space && i > 0) {
        out += ' ';
        if (this.f.sharp) out += '0' + (digits[16] ?? 'x');
      }
      const c = b[i] ?? 0;
      out += (digits[c >> 4] ?? '') + (digits[c & 15] ?? '');
    }
    this.buf += out;
    if (this.f.widPresent && this.f.wid > width && this.f.minus) this.writePadding(this.f.wid - width);
  }

  fmtQ(sIn: string): void {
    const s = this.truncateString(sIn);
    if (this.f.sharp && canBackquote(s)) {
      this.padString('`' + s + '`');
      return;
    }
    this.padString(quote(s, this.f.plus));
  }

  fmtC(c: bigint): void {
    let r = c > 0x10ffffn ? 0xfffd : Number(c);
    if (r >= 0xd800 && r <= 0xdfff) r = 0xfffd;
    this.padString(String.fromCodePoint(r));
  }

  fmtQc(c: bigint): void {
    const r = c > 0x10ffffn ? 0xfffd : Number(c);
    this.padString(quoteRune(r, this.f.plus));
  }

  fmtFloatRaw(v: number, verb: FloatFormat, precIn: number): void {
    const prec = this.f.precPresent ? this.f.prec : precIn;
    let num = formatFloat(v, verb, prec);
    if (num[0] !== '-' && num[0] !== '+') num = '+' + num;
    if (this.f.space && num[0] === '+' && !this.f.plus) num = ' ' + num.slice(1);
    if (num[1] === 'I' || num[1] === 'N') {
      const oldZero = this.f.zero;
      this.f.zero = false;
      if (num[1] === 'N' && !this.f.space && !this.f.plus) num = num.slice(1);
      this.padString(num);
      this.f.zero = oldZero;
      return;
    }
    if (this.f.sharp && verb !== 'b') {
      let digits = 0;
      if (verb === 'g' || verb === 'G' || verb === 'x') digits = prec === -1 ? 6 : prec;
      let tail = '';
      let hasDecimalPoint = false;
      let sawNonzeroDigit = false;
      for (let i = 1; i < num.length; i++) {
        const c = num[i] ?? '';
        if (c === '.') hasDecimalPoint = true;
        else if (c === 'p' || c === 'P') {
          tail = num.slice(i);
          num = num.slice(0, i);
          break;
        } else if ((c === 'e' || c === 'E') && verb !== 'x' && verb !== 'X') {
          tail = num.slice(i);
          num = num.slice(0, i);
          break;
        } else {
          if (c !== '0') sawNonzeroDigit = true;
          if (sawNonzeroDigit) digits--;
        }
      }
      if (!hasDecimalPoint) {
        if (num.length === 2 && num[1] === '0') digits--;
        num += '.';
      }
      while (digits > 0) {
        num += '0';
        digits--;
      }
      num += tail;
    }
    if (this.f.plus || num[0] !== '+') {
      if (this.f.zero && this.f.widPresent && this.f.wid > num.length) {
        this.buf += num[0];
        this.writePadding(this.f.wid - num.length);
        this.buf += num.slice(1);
        return;
      }
      this.padString(num);
      return;
    }
    this.padString(num.slice(1));
  }

  badVerb(verb: string): void {
    this.erroring = true;
    this.buf += '%!' + verb + '(';
    if (!isNilArg(this.arg)) {
      this.buf += typeName(this.arg) + '=';
      this.printArg(this.arg, 'v');
    } else if (this.hasValue && !isNilArg(this.value)) {
      this.buf += typeName(this.value) + '=';
      this.printValue(this.value, 'v', 0);
    } else this.buf += '<nil>';
    this.buf += ')';
    this.erroring = false;
  }

  fmtBool(v: boolean, verb: string): void {
    if (verb === 't' || verb === 'v') this.fmtBoolean(v);
    else this.badVerb(verb);
  }

  fmtIntegerVerb(v: bigint, isSigned: boolean, verb: string): void {
    switch (verb) {
      case 'v':
        if (this.f.sharpV && !isSigned) {
          const sharp = this.f.sharp;
          this.f.sharp = true;
          this.fmtInteger(v, 16, false, 'v', ldigits);
          this.f.sharp = sharp;
        } else this.fmtInteger(v, 10, isSigned, verb, ldigits);
        return;
      case 'd':
        return this.fmtInteger(v, 10, isSigned, verb, ldigits);
      case 'b':
        return this.fmtInteger(v, 2, isSigned, verb, ldigits);
      case 'o':
      case 'O':
        return this.fmtInteger(v, 8, isSigned, verb, ldigits);
      case 'x':
        return this.fmtInteger(v, 16, isSigned, verb, ldigits);
      case 'X':
        return this.fmtInteger(v, 16, isSigned, verb, udigits);
      // Go hands these the operand as uint64, so -1 is 0xFFFFFFFFFFFFFFFF.
      case 'c':
        return this.fmtC(BigInt.asUintN(64, v));
      case 'q':
        return this.fmtQc(BigInt.asUintN(64, v));
      case 'U':
        return this.fmtUnicode(BigInt.asUintN(64, v));
      default:
        return this.badVerb(verb);
    }
  }

  fmtFloat(v: number, verb: string): void {
    switch (verb) {
      case 'v':
        return this.fmtFloatRaw(v, 'g', -1);
      case 'b':
      case 'g':
      case 'G':
      case 'x':
      case 'X':
        return this.fmtFloatRaw(v, verb, -1);
      case 'f':
      case 'e':
      case 'E':
        return this.fmtFloatRaw(v, verb, 6);
      case 'F':
        return this.fmtFloatRaw(v, 'f', 6);
      default:
        return this.badVerb(verb);
    }
  }

  fmtString(v: string, verb: string): void {
    switch (verb) {
      case 'v':
        if (this.f.sharpV) this.fmtQ(v);
        else this.fmtS(v);
        return;
      case 's':
        return this.fmtS(v);
      case 'x':
        return this.fmtSx(v, ldigits);
      case 'X':
        return this.fmtSx(v, udigits);
      case 'q':
        return this.fmtQ(v);
      default:
        return this.badVerb(verb);
    }
  }

  printArg(arg: unknown, verb: string): void {
    this.arg = arg;
    this.value = undefined;
    this.hasValue = false;
    if (isNilArg(arg)) {
      if (verb === 'T' || verb === 'v') this.padString('<nil>');
      else this.badVerb(verb);
      return;
    }
    if (verb === 'T') {
      this.fmtS(typeName(arg));
      return;
    }
    this.printScalarOrValue(arg, verb, 0);
  }

  private printScalarOrValue(v: unknown, verb: string, depth: number): void {
    switch (kindOf(v)) {
      case 'bool':
        return this.fmtBool(v as boolean, verb);
      case 'float':
        return this.fmtFloat(v as number, verb);
      case 'int':
        return this.fmtIntegerVerb(v as bigint, true, verb);
      case 'uint':
        return this.fmtIntegerVerb(BigInt((v as Uint8).value), false, verb);
      case 'string':
        return this.fmtString(v as string, verb);
      case 'slice':
        return this.printSlice(v as unknown[], verb, depth);
      case 'map':
        return this.printMap(v as GoMap, verb, depth);
      default:
        this.buf += '?unsupported?';
    }
  }

  printValue(v: unknown, verb: string, depth: number): void {
    this.arg = undefined;
    this.value = v;
    this.hasValue = true;
    if (v === null || v === undefined) {
      if (depth === 0) this.buf += '<invalid reflect.Value>';
      else if (verb === 'v') this.buf += this.f.sharpV ? 'interface {}(nil)' : '<nil>';
      else this.badVerb(verb);
      return;
    }
    this.printScalarOrValue(v, verb, depth);
  }

  /** An element held in an interface{}: nil prints as <nil> whatever the verb. */
  private printElem(v: unknown, verb: string, depth: number): void {
    if (v === null || v === undefined) {
      this.buf += this.f.sharpV ? 'interface {}(nil)' : '<nil>';
      return;
    }
    this.printValue(v, verb, depth + 1);
  }

  private printSlice(v: readonly unknown[], verb: string, depth: number): void {
    if (this.f.sharpV) {
      this.buf += '[]interface {}{';
      v.forEach((e, i) => {
        if (i > 0) this.buf += ', ';
        this.printElem(e ?? null, verb, depth);
      });
      this.buf += '}';
      return;
    }
    this.buf += '[';
    v.forEach((e, i) => {
      if (i > 0) this.buf += ' ';
      this.printElem(e ?? null, verb, depth);
    });
    this.buf += ']';
  }

  private printMap(m: GoMap, verb: string, depth: number): void {
    this.buf += this.f.sharpV ? 'map[string]interface {}{' : 'map[';
    const keys = mapKeys(m).sort(compareStrings);
    keys.forEach((k, i) => {
      if (i > 0) this.buf += this.f.sharpV ? ', ' : ' ';
      this.printValue(k, verb, depth + 1);
      this.buf += ':';
      this.printElem(mapGet(m, k) ?? null, verb, depth);
    });
    this.buf += this.f.sharpV ? '}' : ']';
  }

  doPrint(args: readonly unknown[]): void {
    let prevString = false;
    args.forEach((arg, i) => {
      const isString = typeof arg === 'string';
      if (i > 0 && !isString && !prevString) this.buf += ' ';
      this.printArg(arg, 'v');
      prevString = isString;
    });
  }

  doPrintln(args: readonly unknown[]): void {
    args.forEach((arg, i) => {
      if (i > 0) this.buf += ' ';
      this.printArg(arg, 'v');
    });
    this.buf += '\n';
  }

  doPrintf(format: string, a: readonly unknown[]): void {
    const end = format.length;
    let argNum = 0;
    let afterIndex = false;
    let reordered = false;
    let goodArgNum = true;

    const argNumber = (argN: number, i: number): [number, number, boolean] => {
      if (format.length <= i || format[i] !== '[') return [argN, i, false];
      reordered = true;
      const [index, wid, ok] = parseArgNumber(format.slice(i));
      if (ok && index >= 0 && index < a.length) return [index, i + wid, true];
      goodArgNum = false;
      return [argN, i + wid, ok];
    };

    let i = 0;
    const max = maxString();
    formatLoop: while (i < end) {
      // Each verb can add up to MAX_PRINTF_WIDTH plus its argument: stop growing as soon as the cap is passed.
      if (this.buf.length > max) throw new LimitExceeded(`result is larger than ${max} characters`);
      checkDeadline();
      goodArgNum = true;
      const lasti = i;
      while (i < end && format[i] !== '%') i++;
      if (i > lasti) this.buf += format.slice(lasti, i);
      if (i >= end) break;
      i++;
      this.clearFlags();
      simpleFormat: for (; i < end; i++) {
        const c = format[i] ?? '';
        switch (c) {
          case '#':
            this.f.sharp = true;
            break;
          case '0':
            this.f.zero = !this.f.minus;
            break;
          case '+':
            this.f.plus = true;
            break;
          case '-':
            this.f.minus = true;
            this.f.zero = false;
            break;
          case ' ':
            this.f.space = true;
            break;
          default:
            if (c >= 'a' && c <= 'z' && argNum < a.length) {
              if (c === 'v') {
                this.f.sharpV = this.f.sharp;
                this.f.sharp = false;
                this.f.plus = false;
              }
              this.printArg(a[argNum], c);
              argNum++;
              i++;
              continue formatLoop;
            }
            break simpleFormat;
        }
      }

      [argNum, i, afterIndex] = argNumber(argNum, i);

      if (i < end && format[i] === '*') {
        i++;
        [this.f.wid, this.f.widPresent, argNum] = intFromArg(a, argNum);
        if (!this.f.widPresent) this.buf += '%!(BADWIDTH)';
        if (this.f.wid < 0) {
          this.f.wid = -this.f.wid;
          this.f.minus = true;
          this.f.zero = false;
        }
        afterIndex = false;
      } else {
        [this.f.wid, this.f.widPresent, i] = parsenum(format, i, end);
        if (afterIndex && this.f.widPresent) goodArgNum = false;
      }

      if (i + 1 < end && format[i] === '.') {
        i++;
        if (afterIndex) goodArgNum = false;
        [argNum, i, afterIndex] = argNumber(argNum, i);
        if (i < end && format[i] === '*') {
          i++;
          [this.f.prec, this.f.precPresent, argNum] = intFromArg(a, argNum);
          if (this.f.prec < 0) {
            this.f.prec = 0;
            this.f.precPresent = false;
          }
          if (!this.f.precPresent) this.buf += '%!(BADPREC)';
          afterIndex = false;
        } else {
          [this.f.prec, this.f.precPresent, i] = parsenum(format, i, end);
          if (!this.f.precPresent) {
            this.f.prec = 0;
            this.f.precPresent = true;
          }
        }
      }

      if (!afterIndex) [argNum, i, afterIndex] = argNumber(argNum, i);

      if (
        (this.f.widPresent && this.f.wid > MAX_PRINTF_WIDTH) ||
        (this.f.precPresent && this.f.prec > MAX_PRINTF_WIDTH)
      ) {
        throw new LimitExceeded(`width or precision larger than ${MAX_PRINTF_WIDTH}`);
      }

      if (i >= end) {
        this.buf += '%!(NOVERB)';
        break;
      }

      const verb = String.fromCodePoint(format.codePointAt(i) ?? 0);
      i += verb.length;

      if (verb === '%') this.buf += '%';
      else if (!goodArgNum) this.buf += '%!' + verb + '(BADINDEX)';
      else if (argNum >= a.length) this.buf += '%!' + verb + '(MISSING)';
      else {
        if (verb === 'v') {
          this.f.sharpV = this.f.sharp;
          this.f.sharp = false;
          this.f.plus = false;
        }
        this.printArg(a[argNum], verb);
        argNum++;
      }
    }

    if (this.buf.length > max) throw new LimitExceeded(`result is larger than ${max} characters`);
    if (!reordered && argNum < a.length) {
      this.clearFlags();
      this.buf += '%!(EXTRA ';
      a.slice(argNum).forEach((arg, k) => {
        if (k > 0) this.buf += ', ';
        if (isNilArg(arg)) this.buf += '<nil>';
        else {
          this.buf += typeName(arg) + '=';
          this.printArg(arg, 'v');
        }
      });
      this.buf += ')';
    }
  }
}

function tooLarge(x: number): boolean {
  return x > 1e6 || x < -1e6;
}

function parsenum(s: string, start: number, end: number): [num: number, isnum: boolean, newi: number] {
  if (start >= end) return [0, false, end];
  let num = 0;
  let isnum = false;
  let i = start;
  for (; i < end && (s[i] ?? '') >= '0' && (s[i] ?? '') <= '9'; i++) {
    if (tooLarge(num)) return [0, false, end];
    num = num * 10 + (s.charCodeAt(i) - 48);
    isnum = true;
  }
  return [num, isnum, i];
}

function parseArgNumber(format: string): [index: number, wid: number, ok: boolean] {
  if (format.length < 3) return [0, 1, false];
  for (let i = 1; i < format.length; i++) {
    if (format[i] === ']') {
      const [width, ok, newi] = parsenum(format, 1, i);
      if (!ok || newi !== i) return [0, i + 1, false];
      return [width - 1, i + 1, true];
    }
  }
  return [0, 1, false];
}

function intFromArg(a: readonly unknown[], argNum: number): [num: number, isInt: boolean, newArgNum: number] {
  if (argNum >= a.length) return [0, false, argNum];
  const v = a[argNum];
  let num = 0;
  let isInt = false;
  if (typeof v === 'bigint') {
    if (v >= -(1n << 63n) && v < 1n << 63n) {
      num = Number(v);
      isInt = true;
    }
  } else if (v instanceof Uint8) {
    num = v.value;
    isInt = true;
  }
  if (tooLarge(num)) return [0, false, argNum + 1];
  return [num, isInt, argNum + 1];
}

/** Go's fmt.Sprint. */
export function sprint(args: readonly unknown[]): string {
  const p = new Printer();
  p.doPrint(args);
  return normalizeBytes(p.buf);
}

/** Go's fmt.Sprintln. */
export function sprintln(args: readonly unknown[]): string {
  const p = new Printer();
  p.doPrintln(args);
  return normalizeBytes(p.buf);
}

/** Go's fmt.Sprintf. */
export function sprintf(format: string, args: readonly unknown[]): string {
  const p = new Printer();
  p.doPrintf(format, args);
  return normalizeBytes(p.buf);
}

/** How a value prints with %v; the hot path of `{{.Field}}` for strings skips the printer. */
export function printString(v: unknown): string {
  if (typeof v === 'string') return v;
  const p = new Printer();
  p.printArg(v, 'v');
  return p.buf;
}
