// The data model, read as Go's encoding/json would decode the same document into `any`:
//   object → map[string]interface {}    array → []interface {}    string → string
//   number → float64 (always, as in Go)  true/false → bool           null → nil
// Template literals and builtins add Go ints (bigint here) and uint8 (a byte of a string).
// `undefined` is Go's invalid reflect.Value (a missing map key); `null` is a nil interface{} held by a map
// or slice. Go tells them apart in a few places (`.a.b` through a null errors, through a missing key it
// does not), so we do too.

import { byteLength } from './bytes';

/** A Go uint8, which only `index` on a string produces. */
export class Uint8 {
  constructor(readonly value: number) {}
}

/** A JSON object or a Map with string keys: Go's map[string]interface {}. */
export type GoMap = { readonly [key: string]: unknown } | ReadonlyMap<string, unknown>;

export type Kind = 'invalid' | 'nil' | 'string' | 'float' | 'int' | 'uint' | 'bool' | 'slice' | 'map' | 'other';

/** The Go kind of a data value. */
export function kindOf(v: unknown): Kind {
  switch (typeof v) {
    case 'undefined':
      return 'invalid';
    case 'string':
      return 'string';
    case 'number':
      return 'float';
    case 'bigint':
      return 'int';
    case 'boolean':
      return 'bool';
    case 'object':
      if (v === null) return 'nil';
      if (Array.isArray(v)) return 'slice';
      if (v instanceof Uint8) return 'uint';
      if (isGoMap(v)) return 'map';
      return 'other';
    default:
      return 'other';
  }
}

/** Only plain objects and Maps count as maps: anything else never exposes its properties. */
export function isGoMap(v: object): v is GoMap {
  if (v instanceof Map) return true;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

const hasOwn = Object.prototype.hasOwnProperty;

/** A map's value for a key, or undefined when the key is absent; never reaches the prototype chain. */
export function mapGet(m: GoMap, key: string): unknown {
  if (m instanceof Map) return m.get(key);
  if (!hasOwn.call(m, key)) return undefined;
  return (m as Record<string, unknown>)[key];
}

/** The keys of a map that hold a value (an own property set to undefined counts as absent). */
export function mapKeys(m: GoMap): string[] {
  const keys: string[] = [];
  if (m instanceof Map) {
    for (const [k, v] of m) if (typeof k === 'string' && v !== undefined) keys.push(k);
    return keys;
  }
  for (const k of Object.keys(m)) if ((m as Record<string, unknown>)[k] !== undefined) keys.push(k);
  return keys;
}

/** Go's type name of a value, as reflect.Type.String() writes it. */
export function typeName(v: unknown): string {
  switch (kindOf(v)) {
    case 'string':
      return 'string';
    case 'float':
      return 'float64';
    case 'int':
      return 'int';
    case 'uint':
      return 'uint8';
    case 'bool':
      return 'bool';
    case 'slice':
      return '[]interface {}';
    case 'map':
      return 'map[string]interface {}';
    case 'nil':
      return 'interface {}';
    case 'invalid':
      return '<nil>';
    default:
      return 'unsupported';
  }
}

/** Go's len for the kinds that have one, or undefined. */
export function lengthOf(v: unknown): number | undefined {
  if (typeof v === 'string') return byteLength(v);
  if (Array.isArray(v)) return v.length;
  if (typeof v === 'object' && v !== null && kindOf(v) === 'map') return mapKeys(v as GoMap).length;
  return undefined;
}

/** Go's truth of a value for if/with/and/or/not: the zero value of its type is false. */
export function isTrue(v: unknown): boolean {
  switch (typeof v) {
    case 'undefined':
      return false;
    case 'string':
      return v.length > 0;
    case 'number':
      return v !== 0;
    case 'bigint':
      return v !== 0n;
    case 'boolean':
      return v;
    case 'object':
      if (v === null) return false;
      if (v instanceof Uint8) return v.value !== 0;
      if (Array.isArray(v)) return v.length > 0;
      if (isGoMap(v)) return mapKeys(v).length > 0;
      return true;
    default:
      return true;
  }
}
