// Go's builtin template functions (and, or, not, len, index, slice, call, print*, html, js, urlquery,
// comparisons) and the function-table types. Each function declares its Go parameter types, because the
// executor checks and converts arguments as Go's reflection does and reports Go's messages when they do
// not fit. A function fails by throwing FuncError; the executor reports `error calling NAME: message`.

import { escapeInChunks } from './budget';
import { byteAt, byteLength, compareStrings, runes, sliceBytes, toBytes } from './bytes';
import { FuncError } from './errors';
import { sprint, sprintf, sprintln } from './fmt';
import { isPrint } from './strconv';
import { isTrue, kindOf, lengthOf, mapGet, typeName, Uint8, type GoMap } from './values';

/**
 * A Go parameter type: `any` is interface{} (a missing value arrives as null), `value` is reflect.Value
 * (undefined for a missing value, null for a nil held by a map or slice), the others must match exactly.
 */
export type ParamType = 'any' | 'value' | 'string' | 'bool' | 'int' | 'float64';

/** A function callable from templates, with its Go signature. */
export interface TemplateFunction {
  readonly params: readonly ParamType[];
  /** Element type of a trailing `...` parameter. */
  readonly variadic?: ParamType | 'boxedValue';
  readonly fn: (...args: never[]) => unknown;
}

/**
 * A value a map or slice held, seen through its interface{} box. Only `slice` sees these (variadic
 * 'boxedValue'), because only its index check looks at the box rather than the value inside.
 */
export class Boxed {
  constructor(readonly value: unknown) {}
}

/** Go's indirectInterface: a nil interface becomes no value at all. */
export function unboxNil(v: unknown): unknown {
  return v === null ? undefined : v;
}

function indexArg(index: unknown, cap: number): number {
  let x: bigint;
  if (index instanceof Boxed) throw new FuncError('cannot index slice/array with type interface {}');
  if (typeof index === 'bigint') x = index;
  else if (index instanceof Uint8) x = BigInt(index.value);
  else if (index === undefined || index === null) throw new FuncError('cannot index slice/array with nil');
  else throw new FuncError(`cannot index slice/array with type ${typeName(index)}`);
  if (x < 0n || x > BigInt(cap)) throw new FuncError(`index out of range: ${x}`);
  return Number(x);
}

function index(itemIn: unknown, ...indexes: unknown[]): unknown {
  let item = unboxNil(itemIn);
  if (item === undefined) throw new FuncError('index of untyped nil');
  for (const raw of indexes) {
    const ix = unboxNil(raw);
    if (item === null || item === undefined) throw new FuncError('index of nil pointer');
    const kind = kindOf(item);
    if (kind === 'slice') {
      const arr = item as readonly unknown[];
      const x = indexArg(ix, arr.length);
      if (x >= arr.length) throw new FuncError('reflect: slice index out of range');
      item = arr[x] ?? null;
    } else if (kind === 'string') {
      const s = item as string;
      const x = indexArg(ix, byteLength(s));
      if (x >= byteLength(s)) throw new FuncError('reflect: string index out of range');
      item = new Uint8(byteAt(s, x));
    } else if (kind === 'map') {
      if (ix === undefined) throw new FuncError('value is nil; should be of type string');
      if (typeof ix !== 'string') throw new FuncError(`value has type ${typeName(ix)}; should be string`);
      const v = mapGet(item as GoMap, ix);
      item = v === undefined ? null : v;
    } else throw new FuncError(`can't index item of type ${typeName(item)}`);
  }
  return item;
}

function slice(itemIn: unknown, ...indexes: unknown[]): unknown {
  const item = unboxNil(itemIn);
  if (item === undefined) throw new FuncError('slice of untyped nil');
  if (indexes.length > 3) throw new FuncError(`too many slice indexes: ${indexes.length}`);
  let cap: number;
  const kind = kindOf(item);
  if (kind === 'string') {
    if (indexes.length === 3) throw new FuncError('cannot 3-index slice a string');
    cap = byteLength(item as string);
  } else if (kind === 'slice') cap = (item as unknown[]).length;
  else throw new FuncError(`can't slice item of type ${typeName(item)}`);
  const idx = [0, cap, 0];
  indexes.forEach((ix, i) => {
    idx[i] = indexArg(ix, cap);
  });
  const [i, j, k] = idx as [number, number, number];
  if (i > j) throw new FuncError(`invalid slice index: ${i} > ${j}`);
  if (indexes.length === 3 && j > k) throw new FuncError(`invalid slice index: ${j} > ${k}`);
  return kind === 'string' ? sliceBytes(item as string, i, j) : (item as unknown[]).slice(i, j);
}

function length(item: unknown): bigint {
  if (item === null) throw new FuncError('len of nil pointer');
  if (item === undefined) throw new FuncError('reflect: call of reflect.Value.Type on zero Value');
  const n = lengthOf(item);
  if (n === undefined) throw new FuncError(`len of type ${typeName(item)}`);
  return BigInt(n);
}

function call(fn: unknown): never {
  // Template data is JSON: it never holds a function, so `call` can only report what Go reports for
  // a value that is not one.
  const v = unboxNil(fn);
  if (v === undefined) throw new FuncError('call of nil');
  throw new FuncError(`non-function of type ${typeName(v)}`);
}

// --- comparison -------------------------------------------------------------------------------------

type BasicKind = 'bool' | 'int' | 'uint' | 'float' | 'string' | 'invalid';

function basicKind(v: unknown): BasicKind {
  const k = kindOf(v);
  return k === 'bool' || k === 'int' || k === 'uint' || k === 'float' || k === 'string' ? k : 'invalid';
}

function asBig(v: unknown): bigint {
  return v instanceof Uint8 ? BigInt(v.value) : (v as bigint);
}

const incompatible = 'incompatible types for comparison';
const invalidType = 'invalid type for comparison';

function eq(arg1In: unknown, ...arg2: unknown[]): boolean {
  const arg1 = unboxNil(arg1In);
  if (arg2.length === 0) throw new FuncError('missing argument for comparison');
  const k1 = basicKind(arg1);
  for (const argIn of arg2) {
    const arg = unboxNil(argIn);
    const k2 = basicKind(arg);
    let truth = false;
    if (k1 !== k2) {
      if (k1 === 'int' && k2 === 'uint') truth = (arg1 as bigint) >= 0n && arg1 === asBig(arg);
      else if (k1 === 'uint' && k2 === 'int') truth = (arg as bigint) >= 0n && asBig(arg1) === arg;
      else if (arg1 !== undefined && arg !== undefined) throw new FuncError(incompatible);
    } else if (k1 === 'uint') truth = asBig(arg1) === asBig(arg);
    else if (k1 !== 'invalid') truth = arg1 === arg;
    else {
      const c1 = kindOf(arg1);
      const c2 = kindOf(arg);
      if (c1 !== c2 && c1 !== 'invalid' && c2 !== 'invalid') {
        throw new FuncError(`non-comparable types ${typesOf(arg1, arg)}`);
      }
      if (arg1 === undefined || arg === undefined) truth = arg1 === arg;
      else throw new FuncError(`non-comparable type ${typesOf(arg)}`);
    }
    if (truth) return true;
  }
  return false;
}

function ne(a: unknown, b: unknown): boolean {
  return !eq(a, b);
}

function lt(aIn: unknown, bIn: unknown): boolean {
  const a = unboxNil(aIn);
  const k1 = basicKind(a);
  if (k1 === 'invalid') throw new FuncError(invalidType);
  const b = unboxNil(bIn);
  const k2 = basicKind(b);
  if (k2 === 'invalid') throw new FuncError(invalidType);
  if (k1 !== k2) {
    if (k1 === 'int' && k2 === 'uint') return (a as bigint) < 0n || (a as bigint) < asBig(b);
    if (k1 === 'uint' && k2 === 'int') return (b as bigint) >= 0n && asBig(a) < (b as bigint);
    throw new FuncError(incompatible);
  }
  switch (k1) {
    case 'bool':
      throw new FuncError(invalidType);
    case 'string':
      return compareStrings(a as string, b as string) < 0;
    case 'uint':
      return asBig(a) < asBig(b);
    default:
      return (a as number | bigint) < (b as number | bigint);
  }
}

function le(a: unknown, b: unknown): boolean {
  return lt(a, b) || eq(a, b);
}

function gt(a: unknown, b: unknown): boolean {
  return !le(a, b);
}

function ge(a: unknown, b: unknown): boolean {
  return !lt(a, b);
}

// --- escapers ---------------------------------------------------------------------------------------

/** Go's evalArgs: one string passes as is; otherwise a missing value reads `<no value>` and all are Sprint-ed. */
function evalArgs(args: readonly unknown[]): string {
  if (args.length === 1 && typeof args[0] === 'string') return args[0];
  return sprint(args.map((a) => (a === null || a === undefined ? '<no value>' : a)));
}

/** The values' Go types, for a message that must not print the values themselves (they may be secrets). */
function typesOf(...values: unknown[]): string {
  return values.map((v) => typeName(v)).join(', ');
}

const htmlReplacements: Record<string, string> = {
  '\0': '\uFFFD',
  '"': '&#34;',
  "'": '&#39;',
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
};

/** Go's template.HTMLEscapeString. */
export function htmlEscape(s: string): string {
  return s.replace(/[\0"'&<>]/g, (c) => htmlReplacements[c] ?? c);
}

/** Go's template.JSEscapeString. */
export function jsEscape(s: string): string {
  if (!/[\\'"<>&=\x00-\x1f\u0080-\uffff]/.test(s)) return s;
  let out = '';
  for (const [r, text] of runes(s)) {
    if (r >= 0 && r < 0x80) {
      switch (text) {
        case '\\':
          out += '\\\\';
          continue;
        case "'":
          out += "\\'";
          continue;
        case '"':
          out += '\\"';
          continue;
        case '<':
          out += '\\u003C';
          continue;
        case '>':
          out += '\\u003E';
          continue;
        case '&':
          out += '\\u0026';
          continue;
        case '=':
          out += '\\u003D';
          continue;
      }
      out += r < 0x20 ? '\\u00' + r.toString(16).toUpperCase().padStart(2, '0') : text;
    } else if (r < 0 || isPrint(r)) out += text;
    else out += '\\u' + r.toString(16).toUpperCase().padStart(4, '0');
  }
  return out;
}

/** Go's url.QueryEscape. */
export function queryEscape(s: string): string {
  let out = '';
  for (const b of toBytes(s)) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === ' ') out += '+';
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

function unreachable(): never {
  throw new Error('and/or are evaluated by the executor');
}

const value: readonly ParamType[] = ['value'];
const twoValues: readonly ParamType[] = ['value', 'value'];

/** Go's builtin functions, with the signatures Go gives them. */
export const builtinFuncs: ReadonlyMap<string, TemplateFunction> = new Map<string, TemplateFunction>([
  ['and', { params: value, variadic: 'value', fn: unreachable }],
  ['or', { params: value, variadic: 'value', fn: unreachable }],
  ['not', { params: value, fn: (v: unknown) => !isTrue(unboxNil(v)) }],
  ['call', { params: value, variadic: 'value', fn: call }],
  ['html', { params: [], variadic: 'any', fn: (...a: unknown[]) => escapeInChunks(evalArgs(a), htmlEscape) }],
  ['js', { params: [], variadic: 'any', fn: (...a: unknown[]) => escapeInChunks(evalArgs(a), jsEscape) }],
  ['urlquery', { params: [], variadic: 'any', fn: (...a: unknown[]) => escapeInChunks(evalArgs(a), queryEscape) }],
  ['index', { params: value, variadic: 'value', fn: index }],
  ['slice', { params: value, variadic: 'boxedValue', fn: slice }],
  ['len', { params: value, fn: length }],
  ['print', { params: [], variadic: 'any', fn: (...a: unknown[]) => sprint(a) }],
  ['println', { params: [], variadic: 'any', fn: (...a: unknown[]) => sprintln(a) }],
  ['printf', { params: ['string'], variadic: 'any', fn: (f: string, ...a: unknown[]) => sprintf(f, a) }],
  ['eq', { params: value, variadic: 'value', fn: eq }],
  ['ne', { params: twoValues, fn: ne }],
  ['lt', { params: twoValues, fn: lt }],
  ['le', { params: twoValues, fn: le }],
  ['gt', { params: twoValues, fn: gt }],
  ['ge', { params: twoValues, fn: ge }],
]);
