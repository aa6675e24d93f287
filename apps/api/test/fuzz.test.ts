import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { startReceiver, testCa, type TestReceiver } from '@gatehook/testkit/receiver';
import { testLookup } from './lookup';

// Fuzz test of every write route of the API: a few hundred generated malformed requests, asserting that none gets a
// 5xx, every 4xx has CONTRACT section 3's error shape with a known code, none hangs, and the server is healthy after.
//
// Everything is generated from one seed, so a failure is reproducible: rerun with FUZZ_SEED=<seed> (printed in the
// test name and in every failure, next to the exact request). The cases of a route depend only on the seed and the
// route's label, not on the other routes.
//
// Sections: 1. generator, 2. route table, 3. sending and assertions, 4. the fuzz, 5. the product bugs it found
// (minimal reproductions that fail until the product is fixed), 6. the server is still healthy afterwards.

const SEED = Number.parseInt(process.env.FUZZ_SEED ?? '20250611', 10) >>> 0;
/** Generated cases per route, on top of the fixed ones (the over-limit bodies). */
const CASES_PER_ROUTE = 30;
/** Every request, answer included, must finish within this; a timeout fails the test as a hang. */
const REQUEST_TIMEOUT_MS = 5_000;
const MB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------------------------
// 1. Generator
// ---------------------------------------------------------------------------------------------------------------

/** mulberry32: a small seeded PRNG; the same seed gives the same bytes on every machine. */
class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  weighted<T>(items: readonly (readonly [T, number])[]): T {
    let roll = this.next() * items.reduce((sum, [, w]) => sum + w, 0);
    for (const [item, weight] of items) {
      roll -= weight;
      if (roll < 0) return item;
    }
    return items[items.length - 1]![0];
  }

  hex(length: number): string {
    return Array.from({ length }, () => this.int(0, 15).toString(16)).join('');
  }

  /** A version 4 uuid, drawn from the seed rather than crypto. */
  uuid(): string {
    return `${this.hex(8)}-${this.hex(4)}-4${this.hex(3)}-${this.pick(['8', '9', 'a', 'b'])}${this.hex(3)}-${this.hex(12)}`;
  }
}

/** A stable 32-bit hash of a string (FNV-1a), to give each route a generator of its own. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonType = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';
const JSON_TYPES: readonly JsonType[] = ['null', 'boolean', 'number', 'string', 'array', 'object'];
/** Nesting of the random values; the deep-nesting cases go further (up to 64). */
const MAX_DEPTH = 5;

// Everything below is raw JSON text, so it can say what JSON.stringify never would (1e400, -0, "\ud800").
const NUMBER_TEXTS = [
  '0',
  '-0',
  '1',
  '-1',
  '0.5',
  '-273.15',
  '1e-300',
  '5e-324',
  '1e308',
  '1e400',
  '-1e400',
  '1E2',
  '0.1e1',
  '9007199254740993',
  '2147483647',
  '2147483648',
  '-2147483649',
  '18446744073709551616',
  '1001',
  '3601',
  '123456789012345678901234567890.123456789',
];
const STRING_TEXTS = [
  '""',
  '" "',
  '"\\t\\r\\n"',
  '"NaN"',
  '"Infinity"',
  '"-Infinity"',
  '"1e999"',
  '"0x1F"',
  '"-0"',
  '"1"',
  '"null"',
  '"true"',
  '"undefined"',
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\ud800"',
  '"\\udfff"',
  '"x\\udbff\\udfffy\\ud83d"',
  '"\\udc00\\ud800"',
  '"\\u202eevil"',
  '"\\ufeffbom"',
  '"\\u2028\\u2029"',
  '"e\\u0301"',
  '"😀🏳️‍🌈"',
  '"\\\\"',
  '"\\/"',
  '"<script>alert(1)</script>"',
  '"\' OR 1=1 --"',
  '"{{.Secret}}"',
  '"{{ vars.TOKEN }}"',
  '"${process.env.HOME}"',
  '"../../etc/passwd"',
  '"%00%ZZ"',
  '"ghk_AAAA"',
  '"whsec_AAAA"',
  '"*"',
  '"org"',
  '"deny"',
  '"mcp_tool_call"',
  '"policy.created"',
  '"https://internal.example.com/x"',
  '"http://169.254.169.254/latest/meta-data"',
  '"https://nxdomain.example.com/x"',
  '"file:///etc/passwd"',
  '"00000000-0000-0000-0000-000000000000"',
  '"0F9A3C55-2B7E-4D6A-9C1E-5A8B7D6C4E21"',
  '"2025-13-45T25:61:61Z"',
  '"0000-01-01T00:00:00Z"',
  '"9999-12-31T23:59:59.999+14:00"',
  '"2025-01-01T00:00:00+25:00"',
  '"2025-01-01"',
];
const DANGEROUS_KEYS = ['__proto__', 'constructor', 'prototype'];
/** Raw key text (inside the quotes). */
const ODD_KEYS = [
  ...DANGEROUS_KEYS,
  'toString',
  'valueOf',
  'hasOwnProperty',
  '',
  ' ',
  'a.b',
  '0',
  '$where',
  '\\u0000',
  'é',
  '\\ud800',
  'X-Api-Key',
  'content-type',
];
/** Code unit bands for random strings: printable ASCII, control characters, the rest of the BMP, surrogates. */
const BANDS: readonly (readonly [number, number])[] = [
  [0x20, 0x7e],
  [0x00, 0x1f],
  [0x80, 0xffff],
  [0xd800, 0xdfff],
];

/** A JSON string literal that escapes every code unit outside printable ASCII, so lone surrogates survive as text. */
function quote(units: readonly number[]): string {
  return `"${units
    .map((u) =>
      u >= 0x20 && u <= 0x7e && u !== 0x22 && u !== 0x5c
        ? String.fromCharCode(u)
        : `\\u${u.toString(16).padStart(4, '0')}`,
    )
    .join('')}"`;
}

function stringText(rng: Rng): string {
  const roll = rng.next();
  if (roll < 0.4) return rng.pick(STRING_TEXTS);
  if (roll < 0.5)
    return JSON.stringify(
      rng.pick(['x', 'é', '😀', '\u202e', ' ']).repeat(rng.pick([201, 257, 1025, 2049, 4097, 65_537])),
    );
  return quote(
    Array.from({ length: rng.int(0, 40) }, () => {
      const [lo, hi] = rng.weighted(BANDS.map((band, i) => [band, i === 0 ? 6 : 1] as const));
      return rng.int(lo, hi);
    }),
  );
}

function numberText(rng: Rng): string {
  if (rng.chance(0.6)) return rng.pick(NUMBER_TEXTS);
  return String(rng.chance(0.5) ? rng.int(-1e9, 1e9) : (rng.next() - 0.5) * 10 ** rng.int(-10, 30));
}

/**
 * A random JSON value of the given type as raw text; objects draw their keys from `keys` (the route's fields) and odd
 * ones.
 */
function jsonText(rng: Rng, type: JsonType, keys: readonly string[], depth = 0): string {
  switch (type) {
    case 'null':
      return 'null';
    case 'boolean':
      return rng.chance(0.5) ? 'true' : 'false';
    case 'number':
      return numberText(rng);
    case 'string':
      return stringText(rng);
    case 'array': {
      const length = depth >= MAX_DEPTH ? 0 : rng.int(0, 5);
      return `[${Array.from({ length }, () => anyJsonText(rng, keys, depth + 1)).join(',')}]`;
    }
    case 'object': {
      const length = depth >= MAX_DEPTH ? 0 : rng.int(0, 5);
      const members = Array.from({ length }, () => {
        const key =
          rng.chance(0.5) && keys.length > 0
            ? JSON.stringify(rng.pick(keys))
            : rng.chance(0.6)
              ? `"${rng.pick(ODD_KEYS)}"`
              : stringText(rng);
        return `${key}:${anyJsonText(rng, keys, depth + 1)}`;
      });
      return `{${members.join(',')}}`;
    }
  }
}

function anyJsonText(rng: Rng, keys: readonly string[], depth = 0): string {
  return jsonText(rng, rng.pick(JSON_TYPES), keys, depth);
}

/** Arrays and objects nested `depth` deep around one scalar. */
function deepText(rng: Rng, keys: readonly string[], depth: number): string {
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    if (rng.chance(0.5)) {
      open += '[';
      close = `]${close}`;
    } else {
      open += `{${JSON.stringify(keys.length > 0 ? rng.pick(keys) : 'a')}:`;
      close = `}${close}`;
    }
  }
  return `${open}${jsonText(rng, rng.pick(['null', 'boolean', 'number', 'string'] as const), keys)}${close}`;
}

function typeOf(value: Json): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value as JsonType;
}

type Path = (string | number)[];

/** Every position inside a value (fields, nested fields, array items), each with the value there. */
function positions(value: Json, prefix: Path = []): { path: Path; value: Json }[] {
  const children: [string | number, Json][] = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : value !== null && typeof value === 'object'
      ? Object.entries(value)
      : [];
  return children.flatMap(([key, child]) => [
    { path: [...prefix, key], value: child },
    ...positions(child, [...prefix, key]),
  ]);
}

/** Every field name anywhere in a value, for random objects that half-resemble a real body. */
function fieldNames(value: Json): string[] {
  return [...new Set(positions(value).flatMap(({ path }) => path.filter((p): p is string => typeof p === 'string')))];
}

const SLOT = 'FUZZ_SLOT_91c4';
const SLOT_KEY = 'FUZZ_KEY_91c4';

function setAt(root: Json, path: Path, replacement: Json): Json {
  const copy = structuredClone(root);
  let node = copy as Record<string | number, Json>;
  path.slice(0, -1).forEach((key) => (node = node[key] as Record<string | number, Json>));
  node[path[path.length - 1]!] = replacement;
  return copy;
}

/** The valid body as text, with the value at `path` replaced by raw JSON text. */
function replaceAt(valid: Json, path: Path, raw: string): string {
  return JSON.stringify(setAt(valid, path, SLOT)).replace(`"${SLOT}"`, () => raw);
}

/** The valid body as text, with one more member `rawKey: rawValue` in the object at `path` (root when empty). */
function addMember(valid: Json, path: Path, rawKey: string, rawValue: string): string {
  return JSON.stringify(setAt(valid, [...path, SLOT_KEY], SLOT)).replace(
    `"${SLOT_KEY}":"${SLOT}"`,
    () => `${rawKey}:${rawValue}`,
  );
}

const RAW_TEXTS = [
  'hello',
  '{',
  '}',
  '[',
  ']',
  '{"name":',
  '{"a":1',
  "{'name':'x'}",
  '{name: "x"}',
  '<?xml version="1.0"?><webhook/>',
  'undefined',
  'NaN',
  'Infinity',
  '-',
  '1 2',
  '{"a":1}{"b":2}',
  '{"a":1,}',
  '[1,]',
  '{"a":01}',
  '"unterminated',
  '{"a":"\\x41"}',
  '{"a":"\\u12"}',
  '{"a":"\t"}',
  '\ufeff{"name":"x"}',
  'null',
  'true',
  '42',
  '"a string"',
  '[]',
  '[{}]',
  '{"a":1}garbage',
  '{"a" 1}',
  '{,}',
  '{"a":nul}',
  '{"a":tru}',
  '{"a":.5}',
  '{"a":+1}',
  '{"a":0x10}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '// comment\n{}',
  'name=x&url=https%3A%2F%2Fhooks.example.com',
  '\u0000',
  '\r\n\r\n',
];
const NO_CONTENT_TYPE = '(none)';
const WRONG_CONTENT_TYPES = [
  NO_CONTENT_TYPE,
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----x',
  'application/xml',
  'application/octet-stream',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/json; charset=utf-7',
  'application/json; charset=nope',
  'application/JSON',
  'application/vnd.gatehook+json',
  'application/json;;',
  'application/json; charset',
  'json',
  '*/*',
  'application/*',
  ';',
  'application/json, text/plain',
];
const CONTENT_ENCODINGS = ['gzip', 'deflate', 'br', 'compress', 'identity', 'gzip, deflate', 'x-unknown', 'GZIP'];
const REAL = '{real}';
const MALFORMED_IDS = [
  'not-a-uuid',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  `{${'a'.repeat(8)}-0000-4000-8000-000000000000}`,
  '6a0e0d7c-0000-4000-8000-0000000000d1x',
  '6a0e0d7c00004000800000000000000d',
  '%00',
  '%ZZ',
  '%E0%A4%A',
  '%F0%9F%98%80',
  '%2e%2e',
  '..',
  'null',
  '0',
  '-1',
  '1e400',
  'x'.repeat(3000),
  "'%20OR%20'1'='1",
  '__proto__',
  'constructor',
  '%20',
  '%0A',
];

type Kind =
  | 'random-json'
  | 'wrong-type-field'
  | 'odd-value-field'
  | 'dangerous-key'
  | 'raw-text'
  | 'truncated'
  | 'wrong-content-type'
  | 'content-encoding'
  | 'empty'
  | 'deep-nesting';
const KINDS: readonly (readonly [Kind, number])[] = [
  ['random-json', 5],
  ['wrong-type-field', 6],
  ['odd-value-field', 4],
  ['dangerous-key', 3],
  ['raw-text', 3],
  ['truncated', 3],
  ['wrong-content-type', 3],
  ['content-encoding', 2],
  ['empty', 2],
  ['deep-nesting', 2],
];

interface FuzzCase {
  kind: Kind | 'over-limit' | 'gzip-bomb';
  ids: Record<Placeholder, string>;
  headers: Record<string, string>;
  body?: Buffer;
  /** The exact status the case must get, where there is one. */
  expect?: number;
}

/** The cases of one route: every kind at least once, then weighted random kinds, then the over-limit bodies. */
function casesFor(route: FuzzRoute, valid: Json): FuzzCase[] {
  const rng = new Rng(SEED ^ hash(label(route)));
  const keys = fieldNames(valid);
  const json = (text: string | Buffer, headers: Record<string, string> = {}) => ({
    headers: { 'content-type': 'application/json', ...headers },
    body: Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8'),
  });

  const bodyOf = (kind: Kind): Pick<FuzzCase, 'headers' | 'body'> => {
    switch (kind) {
      case 'random-json':
        return json(anyJsonText(rng, keys));
      case 'wrong-type-field': {
        const { path, value } = rng.pick(positions(valid));
        const type = rng.pick(JSON_TYPES.filter((t) => t !== typeOf(value)));
        return json(replaceAt(valid, path, jsonText(rng, type, keys, MAX_DEPTH - 2)));
      }
      case 'odd-value-field': {
        // The right type, a hostile value: NUL, lone surrogates, 64 KB, 1e400, year 0000, ...
        const { path, value } = rng.pick(positions(valid));
        return json(replaceAt(valid, path, jsonText(rng, typeOf(value), keys, MAX_DEPTH - 2)));
      }
      case 'dangerous-key': {
        const objects: Path[] = [
          [],
          ...positions(valid)
            .filter((p) => typeOf(p.value) === 'object')
            .map((p) => p.path),
        ];
        const value = rng.chance(0.5)
          ? '{"polluted":true,"isAdmin":true,"status":"active"}'
          : anyJsonText(rng, keys, MAX_DEPTH - 2);
        return json(addMember(valid, rng.pick(objects), `"${rng.pick(DANGEROUS_KEYS)}"`, value));
      }
      case 'raw-text':
        return rng.chance(0.8)
          ? json(rng.pick(RAW_TEXTS))
          : json(Buffer.from(Array.from({ length: rng.int(1, 64) }, () => rng.int(0, 255)))); // not even UTF-8
      case 'truncated': {
        const text = rng.chance(0.7) ? JSON.stringify(valid) : anyJsonText(rng, keys);
        return json(text.slice(0, rng.int(1, Math.max(1, text.length - 1))));
      }
      case 'wrong-content-type': {
        const type = rng.pick(WRONG_CONTENT_TYPES);
        const text = rng.pick([
          JSON.stringify(valid),
          anyJsonText(rng, keys),
          'name=x&limit=1',
          '------x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n------x--',
        ]);
        return { headers: type === NO_CONTENT_TYPE ? {} : { 'content-type': type }, body: Buffer.from(text, 'utf8') };
      }
      case 'content-encoding': {
        const encoding = rng.pick(CONTENT_ENCODINGS);
        const text = Buffer.from(rng.chance(0.5) ? JSON.stringify(valid) : anyJsonText(rng, keys), 'utf8');
        // Half the time the body really is compressed the way the header says (a malformed value inside), half not at
        // all.
        const compress = rng.chance(0.5);
        const body = !compress
          ? text
          : encoding === 'gzip'
            ? gzipSync(text)
            : encoding === 'deflate'
              ? deflateSync(text)
              : encoding === 'br'
                ? brotliCompressSync(text)
                : text;
        return json(body, { 'content-encoding': encoding });
      }
      case 'empty':
        return rng.pick([
          { headers: {}, body: undefined },
          json(''),
          json(' \n\t '),
          { headers: { 'content-type': 'text/plain' }, body: Buffer.alloc(0) },
        ]);
      case 'deep-nesting': {
        const deep = deepText(rng, keys, rng.int(16, 64));
        const positionsInValid = positions(valid);
        return json(
          rng.chance(0.5) || positionsInValid.length === 0
            ? deep
            : replaceAt(valid, rng.pick(positionsInValid).path, deep),
        );
      }
    }
  };
  const idsFor = (): Record<Placeholder, string> => {
    const one = () => (rng.chance(0.75) ? REAL : rng.chance(0.4) ? rng.uuid() : rng.pick(MALFORMED_IDS));
    return { id: one(), delivery_id: one(), rule_id: one() };
  };
  const realIds = { id: REAL, delivery_id: REAL, rule_id: REAL };

  const cases: FuzzCase[] = [];
  for (let n = 0; n < CASES_PER_ROUTE; n++) {
    const kind = n < KINDS.length ? KINDS[n]![0] : rng.weighted(KINDS);
    cases.push({ kind, ids: idsFor(), ...bodyOf(kind) });
  }
  // Just over the body limit, as plain JSON and as a small gzip body that inflates past it: 413 either way.
  const over = Buffer.from(`{"name":"${'x'.repeat(route.limit - 9)}"}`, 'utf8');
  cases.push({ kind: 'over-limit', ids: realIds, ...json(over), expect: 413 });
  cases.push({
    kind: 'gzip-bomb',
    ids: realIds,
    ...json(gzipSync(Buffer.concat([over, Buffer.alloc(MB, ' ')])), { 'content-encoding': 'gzip' }),
    expect: 413,
  });
  return cases;
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Route table: every write route, with the valid body the malformed ones are made from
// ---------------------------------------------------------------------------------------------------------------

type Placeholder = 'id' | 'delivery_id' | 'rule_id';

interface Fixture {
  /** The HTTPS receiver the webhooks point at, so test sends never leave 127.0.0.1. */
  receiverUrl: string;
}

interface FuzzRoute {
  method: 'POST' | 'PATCH' | 'DELETE';
  /** With {id}, {delivery_id}, {rule_id} filled per case: the real resource mostly, else a random or malformed id. */
  path: string;
  valid(fixture: Fixture): Json;
  /** express.json's limit for the route, bytes. */
  limit: number;
  /** Tells two entries of one route apart in the test names. */
  variant?: string;
}

const U1 = '0f9a3c55-2b7e-4d6a-9c1e-5a8b7d6c4e21';
const U2 = '7c2d1e4f-8a9b-4c3d-8e5f-6a7b8c9d0e1f';

const webhookBody = (f: Fixture): Json => ({
  name: 'fuzz target',
  url: f.receiverUrl,
  events: ['policy.created', 'gateway.tool.error'],
  condition: '',
  destination: 'generic',
  format: 'array',
  max_events: 10,
  template: '',
  vars: { TOKEN: 't0k' },
  headers: { 'X-Api-Key': 'k3y' },
});
const ruleBody = (): Json => ({
  name: 'fuzz rule',
  description: 'made by the fuzz test',
  status: 'active',
  scope: {
    type: 'mcp_tool_call',
    mcp_ids: [U1],
    agent_slugs: ['agent-a'],
    agent_instance_ids: [],
    user_ids: [U2],
    groups: ['eng'],
    agent_slug_tag_ids: [],
    mcp_tag_ids: [],
    tool_tag_ids: [],
    tool_patterns: ['github.*'],
    condition: '',
    condition_description: '',
  },
  key_by: ['org', 'user'],
  limit: 1000,
  window_seconds: 60,
  burst: 10,
  action: 'log_only',
});
const auditEvent: Json = {
  action: 'gateway.tool.error',
  actor_type: 'agent',
  actor_id: 'agent-1',
  actor_display_name: 'Agent One',
  resource_type: 'tool',
  resource_id: 'github.create_issue',
  resource_display_name: 'Create issue',
  resources: { mcp: 'github' },
  context: { ip: '10.0.0.1', nested: { ok: true } },
  changes: [{ field: 'x', from: 1, to: 2 }],
  payload: { error: 'boom', code: 500 },
  created_at: '2025-01-01T00:00:00Z',
};
const checkBody = (): Json => ({
  user_id: U2,
  agent_slug: 'agent-a',
  agent_instance_id: U1,
  mcp_id: U1,
  tool_key: 'github.create_issue',
  groups: ['eng'],
  agent_slug_tag_ids: [U1],
  mcp_tag_ids: [],
  tool_tag_ids: [],
  cost: 1,
});
/** Routes that read no body still parse one; malformed ones are made from this. */
const ignoredBody = (): Json => ({
  note: 'this route reads no body',
  count: 1,
  tags: ['a', 'b'],
  nested: { flag: true },
});

// In this order: the DELETEs last, so the other routes find the real webhook and rule.
const ROUTES: FuzzRoute[] = [
  { method: 'POST', path: '/webhooks', valid: webhookBody, limit: MB },
  { method: 'PATCH', path: '/webhooks/{id}', valid: webhookBody, limit: MB },
  ...['rotate-secret', 'enable', 'disable', 'pause', 'resume', 'test'].map((op): FuzzRoute => ({
    method: 'POST',
    path: `/webhooks/{id}/${op}`,
    valid: ignoredBody,
    limit: MB,
  })),
  { method: 'POST', path: '/webhooks/{id}/deliveries/{delivery_id}/retry', valid: ignoredBody, limit: MB },
  { method: 'POST', path: '/audit-events', variant: 'one event', valid: () => auditEvent, limit: 5 * MB },
  {
    method: 'POST',
    path: '/audit-events',
    variant: 'batch',
    valid: () => ({ events: [auditEvent, { ...auditEvent, action: 'policy.created' }] }),
    limit: 5 * MB,
  },
  { method: 'POST', path: '/rate-limits/rules', valid: ruleBody, limit: MB },
  { method: 'PATCH', path: '/rate-limits/rules/{rule_id}', valid: ruleBody, limit: MB },
  { method: 'POST', path: '/rate-limits/check', valid: checkBody, limit: MB },
  { method: 'DELETE', path: '/rate-limits/rules/{rule_id}', valid: ignoredBody, limit: MB },
  { method: 'DELETE', path: '/webhooks/{id}', valid: ignoredBody, limit: MB },
];

function label(route: FuzzRoute): string {
  return `${route.method} ${route.path}${route.variant ? ` (${route.variant})` : ''}`;
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Sending and assertions
// ---------------------------------------------------------------------------------------------------------------

/** CONTRACT section 3: every 4xx code and its status. */
const CONTRACT_4XX: Record<string, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  validation_error: 422,
  rate_limited: 429,
};

/** `cause` is what the server logged as an unhandled error while answering, to point a 500 at its origin. */
type Outcome = { status: number; text: string; ms: number; cause?: string } | { failure: string; ms: number };

/** The API's log lines (it runs in this process); cleared before each request, read after it. */
const logLines: string[] = [];
let api: TestApi;
let org: TestOrg;
let receiver: TestReceiver;
let fixture: Fixture;
let real: Record<Placeholder, string>;

function urlOf(route: FuzzRoute, c: FuzzCase): string {
  const path = route.path.replace(/\{(id|delivery_id|rule_id)\}/g, (_, name: Placeholder) =>
    c.ids[name] === REAL ? real[name] : c.ids[name],
  );
  return `${api.baseUrl}${path}`;
}

function loggedCause(): string | undefined {
  const causes = logLines
    .map((line) => JSON.parse(line) as { msg?: string; err?: { type?: string; message?: string } })
    .filter((entry) => entry.msg === 'unhandled error' && entry.err)
    .map(({ err }) => `${err!.type}: ${(err!.message ?? '').trim().split('\n').pop()!.trim().slice(0, 200)}`);
  return causes.length > 0 ? causes.join('; ') : undefined;
}

async function send(
  method: string,
  url: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
): Promise<Outcome> {
  const started = Date.now();
  logLines.length = 0;
  try {
    // The raw bytes as they are: fetch adds no content-type to a Buffer, and only the case's headers are sent.
    const response = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${org.admin}`, ...headers },
      ...(body ? { body } : {}),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await response.text();
    const cause = loggedCause();
    return { status: response.status, text, ms: Date.now() - started, ...(cause ? { cause } : {}) };
  } catch (error) {
    const e = error as Error & { cause?: Error };
    const failure =
      e.name === 'TimeoutError'
        ? `no answer within ${REQUEST_TIMEOUT_MS} ms (hang)`
        : `request failed: ${e.message}${e.cause ? ` (${e.cause.message})` : ''}`;
    return { failure, ms: Date.now() - started };
  }
}

/** What is wrong with an outcome; empty when it keeps the contract. */
function problemsOf(c: { expect?: number }, outcome: Outcome): string[] {
  if ('failure' in outcome) return [outcome.failure];
  const problems: string[] = [];
  const { status, text } = outcome;
  if (status >= 500) return [`5xx: status ${status}`, ...(c.expect !== undefined ? [`expected ${c.expect}`] : [])];
  if (status < 200 || (status >= 300 && status < 400)) problems.push(`unexpected status ${status}`);
  if (c.expect !== undefined && status !== c.expect) problems.push(`expected status ${c.expect}, got ${status}`);
  if (status >= 400) {
    let body: { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      problems.push('error body is not JSON');
    }
    const error = body?.error;
    if (body && (typeof error !== 'object' || error === null)) problems.push('error body has no "error" object');
    if (error) {
      if (typeof error.code !== 'string' || !(error.code in CONTRACT_4XX))
        problems.push(`unknown error code ${JSON.stringify(error.code)}`);
      else if (CONTRACT_4XX[error.code] !== status) problems.push(`code ${error.code} with status ${status}`);
      if (typeof error.message !== 'string' || error.message.length === 0)
        problems.push('error.message is not a non-empty string');
      const details = error.details;
      if (
        details !== undefined &&
        !(Array.isArray(details) && details.every((d) => typeof d?.path === 'string' && typeof d?.message === 'string'))
      ) {
        problems.push('error.details is not a list of {path, message}');
      }
    }
    if (/\n\s+at .+:\d+:\d+/.test(text)) problems.push('the error carries a stack trace');
  }
  return problems;
}

function preview(body: Buffer | undefined): string {
  if (!body) return '(no body)';
  const text = body.toString('utf8');
  // Long bodies show their head and tail; FUZZ_SEED reproduces them whole.
  const shown = Buffer.from(text, 'utf8').equals(body)
    ? JSON.stringify(
        text.length > 2_000 ? `${text.slice(0, 1_500)}…(${text.length - 2_000} chars)…${text.slice(-500)}` : text,
      )
    : `bytes (not UTF-8) ${body.subarray(0, 300).toString('hex')}${body.length > 300 ? '…' : ''}`;
  return `(${body.length} bytes) ${shown}`;
}

function report(
  title: string,
  method: string,
  url: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
  outcome: Outcome,
  problems: string[],
): string {
  const answer = 'failure' in outcome ? '(none)' : `${outcome.status} ${outcome.text.slice(0, 400)}`;
  return [
    `✗ ${title}: ${problems.join('; ')}`,
    `  request:  ${method} ${url.slice(api.baseUrl.length, api.baseUrl.length + 200)}`,
    `  headers:  ${JSON.stringify(headers)}`,
    `  body:     ${preview(body)}`,
    `  response: ${answer} (${outcome.ms} ms)`,
    ...('cause' in outcome && outcome.cause ? [`  server:   ${outcome.cause}`] : []),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// 4. The fuzz
// ---------------------------------------------------------------------------------------------------------------

let requestsSent = 0;

beforeAll(async () => {
  receiver = await startReceiver();
  api = await startTestApi({
    queues: false,
    lookup: testLookup,
    logLines,
    env: { EGRESS_ALLOW_CIDRS: '127.0.0.1/32', EGRESS_EXTRA_CA_FILE: testCa().caFile, DELIVERY_TIMEOUT_MS: '2000' },
  });
  org = await createTestOrg(api.db);
  fixture = { receiverUrl: receiver.url('/hook') };

  // The real resources the {id} routes hit: a webhook, a failed delivery of it, a rule.
  const webhook = await api.call('POST', '/webhooks', { key: org.admin, body: webhookBody(fixture) });
  expect(webhook.status).toBe(201);
  const rule = await api.call('POST', '/rate-limits/rules', { key: org.admin, body: ruleBody() });
  expect(rule.status).toBe(201);
  const delivery = await api.db.delivery.create({
    data: {
      id: new Rng(SEED).uuid(),
      orgId: org.orgId,
      webhookId: webhook.body.id,
      status: 'failed',
      eventIds: [],
      eventCount: 1,
    },
  });
  real = { id: webhook.body.id, delivery_id: delivery.id, rule_id: rule.body.id };
});

afterAll(async () => {
  // eslint-disable-next-line no-console
  console.log(`fuzz: ${requestsSent} requests, seed ${SEED}`);
  await api?.close();
  await receiver?.close();
});

describe(`fuzz of every write route (seed ${SEED}; rerun with FUZZ_SEED=${SEED})`, () => {
  it.each(ROUTES.map((route) => [label(route), route] as const))(
    '%s: no 5xx, contract errors only, no hang',
    async (_label, route) => {
      const cases = casesFor(route, route.valid(fixture));
      const failures: string[] = [];
      for (const [n, c] of cases.entries()) {
        const url = urlOf(route, c);
        const outcome = await send(route.method, url, c.headers, c.body);
        requestsSent += 1;
        const problems = problemsOf(c, outcome);
        if (problems.length > 0)
          failures.push(
            report(
              `seed ${SEED}, ${label(route)} case #${n} (${c.kind})`,
              route.method,
              url,
              c.headers,
              c.body,
              outcome,
              problems,
            ),
          );
      }
      if (failures.length > 0) {
        throw new Error(
          `${failures.length} of ${cases.length} requests broke the contract:\n\n${failures.join('\n\n')}`,
        );
      }
    },
    120_000,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// 5. PRODUCT BUGS the fuzz found. Not fixed yet: these cases FAIL ON PURPOSE. Do not skip or delete them.
// ---------------------------------------------------------------------------------------------------------------
// Each is the smallest request that reproduces one class of 500 the generated cases above run into (those keep
// failing too). Once the product answers each with a CONTRACT section 3 error (4xx), both go green.

interface KnownBug {
  bug: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Where the contract names the status. */
  expect?: number;
}

const JSON_TYPE = { 'content-type': 'application/json' };
const event = (fields: string) => `{"action":"gateway.tool.error","actor_type":"user",${fields}}`;

const KNOWN_BUGS: KnownBug[] = [
  // BUG 1. A Content-Encoding (gzip, deflate or br, any case) that the bytes do not match: body-parser turns zlib's
  // error into a 400 error without a `type` (read.js: createError(400, error)), fromParserError in
  // apps/api/src/http/errors.ts does not know it, and
  // it leaves as 500 internal. Every route, since express.json runs before routing.
  {
    bug: 'content-encoding gzip on a body that is not gzip',
    method: 'POST',
    path: '/rate-limits/check',
    headers: { ...JSON_TYPE, 'content-encoding': 'gzip' },
    body: '{"tool_key":"x"}',
    expect: 400,
  },
  // BUG 2. A path id with malformed percent-encoding (%ZZ, %E0%A4%A): the router's URIError "Failed to decode
  // param" (status 400) is not mapped either, so 500. CONTRACT 3: a malformed id in a path is a 404. Every route
  // with {id}, {delivery_id} or {rule_id}.
  {
    bug: 'malformed percent-encoding in a path id',
    method: 'POST',
    path: '/webhooks/%ZZ/pause',
    headers: JSON_TYPE,
    body: '{}',
    expect: 404,
  },
  {
    bug: 'malformed percent-encoding in a rule id',
    method: 'DELETE',
    path: '/rate-limits/rules/%E0%A4%A',
    headers: {},
    body: '',
  },
  // BUG 3. NUL (\u0000) in a string the API stores: valid JSON and accepted by the schemas, but Postgres refuses it
  // (text: 22021 invalid byte sequence for encoding "UTF8": 0x00; jsonb: unsupported Unicode escape) -> 500.
  // Seen in webhook name and url, rule name, description and scope lists, audit event fields, keys and values.
  {
    bug: 'NUL in a webhook name',
    method: 'POST',
    path: '/webhooks',
    headers: JSON_TYPE,
    body: '{"name":"a\\u0000b","url":"https://hooks.example.com/in","events":["*"]}',
  },
  {
    bug: 'NUL in a rule name',
    method: 'POST',
    path: '/rate-limits/rules',
    headers: JSON_TYPE,
    body: '{"name":"a\\u0000b","scope":{"type":"mcp_tool_call"},"key_by":["org"],"limit":1,"window_seconds":1}',
  },
  {
    bug: 'NUL in an audit event field',
    method: 'POST',
    path: '/audit-events',
    headers: JSON_TYPE,
    body: event('"actor_id":"\\u0000"'),
  },
  {
    bug: 'NUL in an audit event payload value',
    method: 'POST',
    path: '/audit-events',
    headers: JSON_TYPE,
    body: event('"payload":{"x":"\\u0000"}'),
  },
  // BUG 4. A lone UTF-16 surrogate (\ud800) in a string stored as jsonb: Postgres refuses the JSON text (P2007
  // invalid input syntax for type json) -> 500. Audit event payload/context/changes, and a webhook's new name in a
  // PATCH, which goes into the webhook.updated audit event the API records (a create with it passes).
  {
    bug: 'lone surrogate in an audit event payload',
    method: 'POST',
    path: '/audit-events',
    headers: JSON_TYPE,
    body: event('"payload":{"x":"\\ud800"}'),
  },
  {
    bug: 'lone surrogate in a webhook name (PATCH)',
    method: 'PATCH',
    path: '/webhooks/{id}',
    headers: JSON_TYPE,
    body: '{"name":"\\ud800"}',
  },
  // BUG 5. created_at in year 0000 passes z.iso.datetime, but Postgres cannot store it (22008 date/time field value
  // out of range) -> 500.
  {
    bug: 'audit event created_at in year 0000',
    method: 'POST',
    path: '/audit-events',
    headers: JSON_TYPE,
    body: event('"created_at":"0000-01-01T00:00:00Z"'),
  },
  // BUG 6. Found by probing past the fuzz's modest depth: a payload nested 5,000 deep (10 KB, far under the 5 MB
  // limit) overflows the stack in zod's recursive z.json() (RangeError) -> 500.
  {
    bug: 'audit event payload nested 5000 deep',
    method: 'POST',
    path: '/audit-events',
    headers: JSON_TYPE,
    body: event(`"payload":{"x":${'['.repeat(5_000)}${']'.repeat(5_000)}}`),
  },
];

describe('PRODUCT BUGS found by the fuzz (failing until the product is fixed)', () => {
  let webhookId: string;
  beforeAll(async () => {
    // The fuzz deleted its webhook; {id} here is a fresh one.
    webhookId = (await api.call('POST', '/webhooks', { key: org.admin, body: webhookBody(fixture) })).body.id;
  });

  it.each(KNOWN_BUGS.map((b) => [b.bug, b] as const))('%s: a contract 4xx, not a 500', async (_bug, b) => {
    const url = `${api.baseUrl}${b.path.replace('{id}', webhookId)}`;
    const body = b.body === '' ? undefined : Buffer.from(b.body, 'utf8');
    const outcome = await send(b.method, url, b.headers, body);
    requestsSent += 1;
    const problems = problemsOf(b, outcome);
    if (problems.length > 0)
      throw new Error(report(`known product bug: ${b.bug}`, b.method, url, b.headers, body, outcome, problems));
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 6. Afterwards
// ---------------------------------------------------------------------------------------------------------------

describe('after the fuzz', () => {
  it('leaves the server healthy: /healthz, a new rule and a check all succeed, and no prototype was polluted', async () => {
    // A fresh organisation, so no rule the fuzz may have created takes part in the check.
    const fresh = await createTestOrg(api.db);
    const health = await fetch(`${api.baseUrl}/healthz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    expect(health.status).toBe(200);

    const rule = await api.call('POST', '/rate-limits/rules', {
      key: fresh.admin,
      body: {
        name: 'after the fuzz',
        scope: { type: 'mcp_tool_call', tool_patterns: ['fuzz.*'] },
        key_by: ['org'],
        limit: 5,
        window_seconds: 60,
      },
    });
    expect(rule.status).toBe(201);
    const check = await api.call('POST', '/rate-limits/check', { key: fresh.member, body: { tool_key: 'fuzz.after' } });
    expect(check.status).toBe(200);
    expect(check.body).toMatchObject({ allowed: true, denied_by: null });
    expect(check.body.rules).toEqual([
      expect.objectContaining({ rule_id: rule.body.id, limit: 5, remaining: 4, exceeded: false }),
    ]);

    // The API runs in this process: a pollution of Object.prototype by a `__proto__` body would show here.
    const probe: Record<string, unknown> = {};
    expect([probe.polluted, probe.isAdmin, probe.status]).toEqual([undefined, undefined, undefined]);
  });
});
