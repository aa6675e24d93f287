// The scanner of Go's text/template: text and actions, trim markers, comments, and the tokens inside an
// action. It is lazy, like Go's, so a lexical error after the first parse error is never reported.

import { byteLength } from './bytes';
import { isPrint, quote } from './strconv';

export type ItemType =
  | 'error'
  | 'bool'
  | 'char'
  | 'charConstant'
  | 'comment'
  | 'complex'
  | 'assign'
  | 'declare'
  | 'eof'
  | 'field'
  | 'identifier'
  | 'leftDelim'
  | 'leftParen'
  | 'number'
  | 'pipe'
  | 'rawString'
  | 'rightDelim'
  | 'rightParen'
  | 'space'
  | 'string'
  | 'text'
  | 'variable'
  // keywords
  | 'block'
  | 'break'
  | 'continue'
  | 'dot'
  | 'define'
  | 'else'
  | 'end'
  | 'if'
  | 'nil'
  | 'range'
  | 'template'
  | 'with';

export interface Item {
  readonly type: ItemType;
  readonly pos: number;
  readonly val: string;
  readonly line: number;
}

const keywords: ReadonlyMap<string, ItemType> = new Map<string, ItemType>([
  ['.', 'dot'],
  ['block', 'block'],
  ['break', 'break'],
  ['continue', 'continue'],
  ['define', 'define'],
  ['else', 'else'],
  ['end', 'end'],
  ['if', 'if'],
  ['range', 'range'],
  ['nil', 'nil'],
  ['template', 'template'],
  ['with', 'with'],
]);

const keywordTypes: ReadonlySet<ItemType> = new Set(keywords.values());

/** How Go quotes a token in "unexpected X in Y" messages. */
export function itemString(i: Item): string {
  if (i.type === 'eof') return 'EOF';
  if (i.type === 'error') return i.val;
  if (keywordTypes.has(i.type)) return '<' + i.val + '>';
  if (byteLength(i.val) > 10) return quote(Array.from(i.val).slice(0, 10).join('')) + '...';
  return quote(i.val);
}

const LEFT = '{{';
const RIGHT = '}}';
const LEFT_COMMENT = '/*';
const RIGHT_COMMENT = '*/';
const EOF = -1;

function isSpace(r: number): boolean {
  return r === 0x20 || r === 0x09 || r === 0x0d || r === 0x0a;
}

const letterOrDigit = /^[\p{L}\p{Nd}]$/u;

function isAlphaNumeric(r: number): boolean {
  if (r < 0x80) {
    return r === 0x5f || (r >= 0x30 && r <= 0x39) || (r >= 0x41 && r <= 0x5a) || (r >= 0x61 && r <= 0x7a);
  }
  return r >= 0 && letterOrDigit.test(String.fromCodePoint(r));
}

function hasLeftTrimMarker(s: string, at: number): boolean {
  return s.length - at >= 2 && s[at] === '-' && isSpace(s.charCodeAt(at + 1));
}

function hasRightTrimMarker(s: string, at: number): boolean {
  return s.length - at >= 2 && isSpace(s.charCodeAt(at)) && s[at + 1] === '-';
}

function trimRightLength(s: string): number {
  let n = s.length;
  while (n > 0 && isSpace(s.charCodeAt(n - 1))) n--;
  return s.length - n;
}

type StateFn = (() => StateFn) | null;

function countNewlines(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (s.charCodeAt(i) === 10) n++;
  return n;
}

/** The lexer of one template text; the parser pulls items with nextItem(). */
export class Lexer {
  private pos = 0;
  private start = 0;
  private atEOF = false;
  private parenDepth = 0;
  private line = 1;
  private startLine = 1;
  private readonly queue: Item[] = [];
  private state: StateFn;

  constructor(
    private readonly input: string,
    private readonly breakOK: boolean,
    private readonly continueOK: boolean,
  ) {
    this.state = this.lexText;
  }

  nextItem(): Item {
    while (this.queue.length === 0) {
      if (this.state === null) return { type: 'eof', pos: this.pos, val: '', line: this.line };
      this.state = this.state();
    }
    return this.queue.shift() as Item;
  }

  private next(): number {
    if (this.pos >= this.input.length) {
      this.atEOF = true;
      return EOF;
    }
    const r = this.input.codePointAt(this.pos) ?? 0;
    this.pos += r > 0xffff ? 2 : 1;
    if (r === 10) this.line++;
    return r;
  }

  private peek(): number {
    if (this.pos >= this.input.length) return EOF;
    return this.input.codePointAt(this.pos) ?? 0;
  }

  private backup(): void {
    if (!this.atEOF && this.pos > 0) {
      const c = this.input.charCodeAt(this.pos - 1);
      const w = c >= 0xdc00 && c <= 0xdfff && this.pos >= 2 && this.isHigh(this.input.charCodeAt(this.pos - 2)) ? 2 : 1;
      this.pos -= w;
      if (c === 10) this.line--;
    }
  }

  private isHigh(c: number): boolean {
    return c >= 0xd800 && c <= 0xdbff;
  }

  private emit(type: ItemType): void {
    this.queue.push({ type, pos: this.start, val: this.input.slice(this.start, this.pos), line: this.startLine });
    this.start = this.pos;
    this.startLine = this.line;
  }

  private ignore(): void {
    this.line += countNewlines(this.input, this.start, this.pos);
    this.start = this.pos;
    this.startLine = this.line;
  }

  private accept(valid: string): boolean {
    const r = this.next();
    if (r !== EOF && valid.includes(String.fromCodePoint(r))) return true;
    this.backup();
    return false;
  }

  private acceptRun(valid: string): void {
    for (;;) {
      const r = this.next();
      if (r === EOF || !valid.includes(String.fromCodePoint(r))) break;
    }
    this.backup();
  }

  private errorf(message: string): StateFn {
    this.queue.push({ type: 'error', pos: this.start, val: message, line: this.startLine });
    return null;
  }

  private readonly lexText = (): StateFn => {
    const x = this.input.indexOf(LEFT, this.pos);
    if (x >= 0) {
      this.pos = x;
      let trimLength = 0;
      if (hasLeftTrimMarker(this.input, this.pos + LEFT.length)) {
        trimLength = trimRightLength(this.input.slice(this.start, this.pos));
      }
      this.pos -= trimLength;
      if (this.pos > this.start) {
        this.line += countNewlines(this.input, this.start, this.pos);
        this.emit('text');
      }
      this.pos += trimLength;
      this.ignore();
      return this.lexLeftDelim;
    }
    this.pos = this.input.length;
    if (this.pos > this.start) {
      this.line += countNewlines(this.input, this.start, this.pos);
      this.emit('text');
    }
    this.emit('eof');
    return null;
  };

  private atRightDelim(): [delim: boolean, trimSpaces: boolean] {
    if (hasRightTrimMarker(this.input, this.pos) && this.input.startsWith(RIGHT, this.pos + 2)) return [true, true];
    if (this.input.startsWith(RIGHT, this.pos)) return [true, false];
    return [false, false];
  }

  private leftTrimLength(at: number): number {
    let i = at;
    while (i < this.input.length && isSpace(this.input.charCodeAt(i))) i++;
    return i - at;
  }

  private readonly lexLeftDelim = (): StateFn => {
    this.pos += LEFT.length;
    const trimSpace = hasLeftTrimMarker(this.input, this.pos);
    const afterMarker = trimSpace ? 2 : 0;
    if (this.input.startsWith(LEFT_COMMENT, this.pos + afterMarker)) {
      this.pos += afterMarker;
      this.ignore();
      return this.lexComment;
    }
    this.emit('leftDelim');
    this.pos += afterMarker;
    this.ignore();
    this.parenDepth = 0;
    return this.lexInsideAction;
  };

  private readonly lexComment = (): StateFn => {
    this.pos += LEFT_COMMENT.length;
    const i = this.input.indexOf(RIGHT_COMMENT, this.pos);
    if (i < 0) return this.errorf('unclosed comment');
    this.pos = i + RIGHT_COMMENT.length;
    const [delim, trimSpace] = this.atRightDelim();
    if (!delim) return this.errorf('comment ends before closing delimiter');
    if (trimSpace) this.pos += 2;
    this.pos += RIGHT.length;
    if (trimSpace) this.pos += this.leftTrimLength(this.pos);
    this.ignore();
    return this.lexText;
  };

  private readonly lexRightDelim = (): StateFn => {
    const trimSpace = hasRightTrimMarker(this.input, this.pos);
    if (trimSpace) {
      this.pos += 2;
      this.ignore();
    }
    this.pos += RIGHT.length;
    this.emit('rightDelim');
    if (trimSpace) {
      this.pos += this.leftTrimLength(this.pos);
      this.ignore();
    }
    return this.lexText;
  };

  private readonly lexInsideAction = (): StateFn => {
    const [delim] = this.atRightDelim();
    if (delim) {
      if (this.parenDepth === 0) return this.lexRightDelim;
      return this.errorf('unclosed left paren');
    }
    const r = this.next();
    if (r === EOF) return this.errorf('unclosed action');
    if (isSpace(r)) {
      this.backup();
      return this.lexSpace;
    }
    switch (r) {
      case 0x3d: // =
        this.emit('assign');
        return this.lexInsideAction;
      case 0x3a: // :
        if (this.next() !== 0x3d) return this.errorf('expected :=');
        this.emit('declare');
        return this.lexInsideAction;
      case 0x7c: // |
        this.emit('pipe');
        return this.lexInsideAction;
      case 0x22:
        return this.lexQuote;
      case 0x60:
        return this.lexRawQuote;
      case 0x24:
        return this.lexVariable;
      case 0x27:
        return this.lexChar;
      case 0x2e: {
        if (this.pos < this.input.length) {
          const c = this.input.charCodeAt(this.pos);
          if (c < 0x30 || c > 0x39) return this.lexField;
        }
        this.backup();
        return this.lexNumber;
      }
      case 0x28:
        this.emit('leftParen');
        this.parenDepth++;
        return this.lexInsideAction;
      case 0x29:
        this.emit('rightParen');
        this.parenDepth--;
        if (this.parenDepth < 0) return this.errorf("unexpected right paren U+0029 ')'");
        return this.lexInsideAction;
    }
    if (r === 0x2b || r === 0x2d || (r >= 0x30 && r <= 0x39)) {
      this.backup();
      return this.lexNumber;
    }
    if (isAlphaNumeric(r)) {
      this.backup();
      return this.lexIdentifier;
    }
    if (r < 0x80 && r >= 0x20 && r < 0x7f) {
      this.emit('char');
      return this.lexInsideAction;
    }
    return this.errorf('unrecognized character in action: ' + goRuneString(r));
  };

  private readonly lexSpace = (): StateFn => {
    let numSpaces = 0;
    for (;;) {
      const r = this.peek();
      if (!isSpace(r)) break;
      this.next();
      numSpaces++;
    }
    if (hasRightTrimMarker(this.input, this.pos - 1) && this.input.startsWith(RIGHT, this.pos - 1 + 2)) {
      this.backup();
      if (numSpaces === 1) return this.lexRightDelim;
    }
    this.emit('space');
    return this.lexInsideAction;
  };

  private readonly lexIdentifier = (): StateFn => {
    for (;;) {
      const r = this.next();
      if (isAlphaNumeric(r)) continue;
      this.backup();
      const word = this.input.slice(this.start, this.pos);
      if (!this.atTerminator()) return this.errorf('bad character ' + goRuneString(r));
      const kw = keywords.get(word);
      if (kw !== undefined && kw !== 'dot') {
        if ((kw === 'break' && !this.breakOK) || (kw === 'continue' && !this.continueOK)) this.emit('identifier');
        else this.emit(kw);
      } else if (word[0] === '.') this.emit('field');
      else if (word === 'true' || word === 'false') this.emit('bool');
      else this.emit('identifier');
      return this.lexInsideAction;
    }
  };

  private readonly lexField = (): StateFn => this.lexFieldOrVariable('field');

  private readonly lexVariable = (): StateFn => {
    if (this.atTerminator()) {
      this.emit('variable');
      return this.lexInsideAction;
    }
    return this.lexFieldOrVariable('variable');
  };

  private lexFieldOrVariable(type: 'field' | 'variable'): StateFn {
    if (this.atTerminator()) {
      this.emit(type === 'variable' ? 'variable' : 'dot');
      return this.lexInsideAction;
    }
    let r: number;
    for (;;) {
      r = this.next();
      if (!isAlphaNumeric(r)) {
        this.backup();
        break;
      }
    }
    if (!this.atTerminator()) return this.errorf('bad character ' + goRuneString(r));
    this.emit(type);
    return this.lexInsideAction;
  }

  private atTerminator(): boolean {
    const r = this.peek();
    if (isSpace(r)) return true;
    switch (r) {
      case EOF:
      case 0x2e:
      case 0x2c:
      case 0x7c:
      case 0x3a:
      case 0x29:
      case 0x28:
        return true;
    }
    return this.input.startsWith(RIGHT, this.pos);
  }

  private readonly lexChar = (): StateFn => {
    for (;;) {
      let r = this.next();
      if (r === 0x5c) {
        r = this.next();
        if (r !== EOF && r !== 10) continue;
        return this.errorf('unterminated character constant');
      }
      if (r === EOF || r === 10) return this.errorf('unterminated character constant');
      if (r === 0x27) break;
    }
    this.emit('charConstant');
    return this.lexInsideAction;
  };

  private readonly lexNumber = (): StateFn => {
    if (!this.scanNumber()) return this.errorf('bad number syntax: ' + quote(this.input.slice(this.start, this.pos)));
    const sign = this.peek();
    if (sign === 0x2b || sign === 0x2d) {
      if (!this.scanNumber() || this.input[this.pos - 1] !== 'i') {
        return this.errorf('bad number syntax: ' + quote(this.input.slice(this.start, this.pos)));
      }
      this.emit('complex');
    } else this.emit('number');
    return this.lexInsideAction;
  };

  private scanNumber(): boolean {
    this.accept('+-');
    let digits = '0123456789_';
    if (this.accept('0')) {
      if (this.accept('xX')) digits = '0123456789abcdefABCDEF_';
      else if (this.accept('oO')) digits = '01234567_';
      else if (this.accept('bB')) digits = '01_';
    }
    this.acceptRun(digits);
    if (this.accept('.')) this.acceptRun(digits);
    if (digits.length === 11 && this.accept('eE')) {
      this.accept('+-');
      this.acceptRun('0123456789_');
    }
    if (digits.length === 23 && this.accept('pP')) {
      this.accept('+-');
      this.acceptRun('0123456789_');
    }
    this.accept('i');
    if (isAlphaNumeric(this.peek())) {
      this.next();
      return false;
    }
    return true;
  }

  private readonly lexQuote = (): StateFn => {
    for (;;) {
      let r = this.next();
      if (r === 0x5c) {
        r = this.next();
        if (r !== EOF && r !== 10) continue;
        return this.errorf('unterminated quoted string');
      }
      if (r === EOF || r === 10) return this.errorf('unterminated quoted string');
      if (r === 0x22) break;
    }
    this.emit('string');
    return this.lexInsideAction;
  };

  private readonly lexRawQuote = (): StateFn => {
    for (;;) {
      const r = this.next();
      if (r === EOF) return this.errorf('unterminated raw quoted string');
      if (r === 0x60) break;
    }
    this.emit('rawString');
    return this.lexInsideAction;
  };
}

/** Go's %#U: U+0041 'A'. */
export function goRuneString(r: number): string {
  if (r < 0) return "U+FFFD '\uFFFD'";
  const hex = r.toString(16).toUpperCase().padStart(4, '0');
  return isPrint(r) ? `U+${hex} '${String.fromCodePoint(r)}'` : `U+${hex}`;
}
