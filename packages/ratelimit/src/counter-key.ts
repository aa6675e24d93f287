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

/**
 * The readable key of a call under a rule's key_by (already canonical: sorted, unique, with org), e.g.
 * `org=<id>;tool=search;user=<id>`. Values are percent-encoded so `;` and `=` cannot forge another key; a call
 * without the attribute counts under the empty value (all such calls share that budget).
 */
export function budgetKey(orgId: string, keyBy: readonly KeyBy[], call: ToolCall): string {
  return keyBy.map((dimension) => `${dimension}=${encodeURIComponent(dimension === 'org' ? orgId : (attribute[dimension](call) ?? ''))}`).join(';');
}

/** The id of the counter of a rule and budget key, unique within an organisation. */
export function counterId(ruleId: string, key: string): string {
  return `${ruleId}:${key}`;
}

/** The Redis key of a counter, hash-tagged by organisation. */
export function counterKey(prefix: string, orgId: string, id: string): string {
  return `${prefix}:rl:{${orgId}}:${id}`;
}
