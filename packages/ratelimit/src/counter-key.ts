// The counter a call counts against: one per (rule, key), where the key is the call's values of the rule's
// key_by dimensions in canonical (sorted) order. The organisation is the hash tag, so every counter one check
// touches lives in one Redis Cluster slot and the check stays one script call.

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

/** The id of the counter of a rule and budget key, unique within an organisation. */
export function counterId(ruleId: string, key: string): string {
  return `${ruleId}:${key}`;
}

/** The Redis key of a counter, hash-tagged by organisation. */
export function counterKey(prefix: string, orgId: string, id: string): string {
  return `${prefix}:rl:{${orgId}}:${id}`;
}
