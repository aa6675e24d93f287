// The counter a call counts against: one per (rule, key), where the key is the call's values of the rule's
// key_by dimensions in canonical (sorted) order. Two spellings of that key:
//  - the budget key, readable and self-describing (`org=<id>;user=<id>`), for audit events and logs;
//  - the counter key, what stores index by: the values of key_by besides `org` only (counters live per
//    organisation and per rule, whose key_by is fixed, so names and the organisation add nothing). With one
//    dimension it is the call's own string, whose hash V8 already holds: no string is built on a check.
// In Redis the organisation is the hash tag, so every counter one check touches lives in one Redis Cluster slot
// and the check stays one script call.

import type { KeyBy } from '@gatehook/core/rate-limit-rule-schema';
import type { ToolCall } from './scope';

const attribute: Record<Exclude<KeyBy, 'org'>, (call: ToolCall) => string | undefined> = {
  agent: (c) => c.agent_slug,
  agent_instance: (c) => c.agent_instance_id,
  mcp: (c) => c.mcp_id,
  tool: (c) => c.tool_key,
  user: (c) => c.user_id,
};

// Only the separators (and the escape character itself) are escaped: enough to keep keys unambiguous, and most
// values (uuids, tool keys) pass through without a copy.
const SEPARATORS = /[%;=]/g;
const ESCAPES: Record<string, string> = { '%': '%25', ';': '%3B', '=': '%3D' };
function escapeValue(value: string): string {
  // A character scan beats a RegExp search on the short values (uuids, tool keys) of every check.
  for (let i = 0; i < value.length; i += 1) {
    const c = value.charCodeAt(i);
    if (c === 37 || c === 59 || c === 61) return value.replace(SEPARATORS, (s) => ESCAPES[s]!); // % ; =
  }
  return value;
}

/**
 * The readable key of a call under a rule's key_by (already canonical: sorted, unique, with org), e.g.
 * `org=<id>;tool=search;user=<id>`. `%`, `;` and `=` in values are percent-encoded so one key cannot forge
 * another; a call without the attribute counts under the empty value (all such calls share that budget).
 */
export function budgetKey(orgId: string, keyBy: readonly KeyBy[], call: ToolCall): string {
  let key = '';
  for (const dimension of keyBy) {
    const value = dimension === 'org' ? orgId : (attribute[dimension](call) ?? '');
    key += `${key === '' ? '' : ';'}${dimension}=${escapeValue(value)}`;
  }
  return key;
}

/** How a rule's counter key is read off a call: compiled once per rule. */
export type CounterKeyOf = (call: ToolCall) => string;

/**
 * The counter key of a rule's key_by (canonical: sorted, unique, with org): `''` for `["org"]`, the value itself
 * for one more dimension, the values escaped and `;`-joined for several (so one call's values cannot forge
 * another's). A missing attribute counts under the empty value, as in the budget key.
 */
export function compileCounterKey(keyBy: readonly KeyBy[]): CounterKeyOf {
  const reads = keyBy
    .filter((dimension): dimension is Exclude<KeyBy, 'org'> => dimension !== 'org')
    .map((dimension) => attribute[dimension]);
  if (reads.length === 0) return () => '';
  if (reads.length === 1) {
    const read = reads[0]!;
    return (call) => read(call) ?? '';
  }
  return (call) => {
    let key = escapeValue(reads[0]!(call) ?? '');
    for (let i = 1; i < reads.length; i += 1) key += `;${escapeValue(reads[i]!(call) ?? '')}`;
    return key;
  };
}

/** The Redis key of a counter (its rule or other owner, and its counter key), hash-tagged by organisation. */
export function counterKey(prefix: string, orgId: string, owner: string, key: string): string {
  return `${prefix}:rl:{${orgId}}:${owner}:${key}`;
}
