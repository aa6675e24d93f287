import { z } from 'zod';

export const RULE_STATUSES = ['active', 'disabled'] as const;
export const RULE_ACTIONS = ['deny', 'log_only'] as const;
/** What a rule may count its budget per (CONTRACT 8). `org` is always one of them. */
export const KEY_BY_VALUES = ['org', 'user', 'agent', 'agent_instance', 'mcp', 'tool'] as const;

export type RuleStatus = (typeof RULE_STATUSES)[number];
export type RuleAction = (typeof RULE_ACTIONS)[number];
export type KeyBy = (typeof KEY_BY_VALUES)[number];

/** Limits where SPEC.md says "not shown"; recorded in docs/rate-limits.md. */
export const RULE_LIMITS = {
  nameLength: 200,
  descriptionLength: 2000,
  scopeListItems: 200,
  /** Globs a rule may hold: each is matched against every checked tool key. */
  toolPatternsPerRule: 50,
  /** Active rules of one organisation: a check matches every one of them. Disabled rules do not count. */
  activeRulesPerOrganisation: 100,
  scopeValueLength: 256,
  conditionLength: 1024,
  conditionDescriptionLength: 2000,
  /** int32, SPEC 2.5. */
  maxLimit: 2_147_483_647,
  maxWindowSeconds: 3600,
} as const;

const name = z
  .string({ error: 'name must be a string' })
  .trim()
  .min(1, 'name must not be blank')
  .max(RULE_LIMITS.nameLength, `name must be at most ${RULE_LIMITS.nameLength} characters`);
const description = z
  .string({ error: 'description must be a string or null' })
  .max(RULE_LIMITS.descriptionLength, `description must be at most ${RULE_LIMITS.descriptionLength} characters`)
  .nullable();

// Uuids are compared in lower case everywhere: the scope stores them so, and a check request is folded alike.
const uuidList = z
  .array(
    z.uuid('must be a uuid').transform((id) => id.toLowerCase()),
    { error: 'must be an array of uuids' },
  )
  .max(RULE_LIMITS.scopeListItems, `at most ${RULE_LIMITS.scopeListItems} items`);
const stringList = z
  .array(
    z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(RULE_LIMITS.scopeValueLength, `at most ${RULE_LIMITS.scopeValueLength} characters`),
    { error: 'must be an array of strings' },
  )
  .max(RULE_LIMITS.scopeListItems, `at most ${RULE_LIMITS.scopeListItems} items`);

/**
 * What a rule matches (SPEC 2.5, CONTRACT 8). Every list is optional; absent and empty both mean "no constraint".
 * The stored and returned form has every field present, so a reader sees what the rule means.
 */
export const ruleScopeSchema = z.strictObject({
  type: z.literal('mcp_tool_call', 'scope.type must be mcp_tool_call'),
  mcp_ids: uuidList.default([]),
  agent_slugs: stringList.default([]),
  agent_instance_ids: uuidList.default([]),
  user_ids: uuidList.default([]),
  groups: stringList.default([]),
  agent_slug_tag_ids: uuidList.default([]),
  mcp_tag_ids: uuidList.default([]),
  tool_tag_ids: uuidList.default([]),
  /** Globs over the tool key: `*` any run of characters, `?` one character. */
  tool_patterns: stringList
    .max(RULE_LIMITS.toolPatternsPerRule, `at most ${RULE_LIMITS.toolPatternsPerRule} patterns per rule`)
    .default([]),
  /** CEL over `call`; compiled by the service (packages/conditions), blank means none. */
  condition: z
    .string({ error: 'condition must be a string' })
    .max(RULE_LIMITS.conditionLength, `condition must be at most ${RULE_LIMITS.conditionLength} characters`)
    .default(''),
  condition_description: z
    .string({ error: 'condition_description must be a string' })
    .max(
      RULE_LIMITS.conditionDescriptionLength,
      `condition_description must be at most ${RULE_LIMITS.conditionDescriptionLength} characters`,
    )
    .default(''),
});
export type RuleScope = z.output<typeof ruleScopeSchema>;
export type RuleScopeInput = z.input<typeof ruleScopeSchema>;

/** key_by: at least one item, includes org, no duplicates; canonicalised to sorted order. */
const keyBy = z
  .array(z.enum(KEY_BY_VALUES, `key_by values are ${KEY_BY_VALUES.join(', ')}`), { error: 'key_by must be an array' })
  .min(1, 'key_by must have at least one item')
  .superRefine((list, ctx) => {
    if (!list.includes('org')) ctx.addIssue({ code: 'custom', message: 'key_by must include org' });
    const seen = new Set<string>();
    list.forEach((value, index) => {
      if (seen.has(value))
        ctx.addIssue({ code: 'custom', path: [index], message: `duplicate key_by value "${value}"` });
      seen.add(value);
    });
  })
  .transform((list) => [...list].sort());

const limit = z
  .number({ error: 'limit must be an integer' })
  .int('limit must be an integer')
  .min(1, 'limit must be at least 1')
  .max(RULE_LIMITS.maxLimit, `limit must be at most ${RULE_LIMITS.maxLimit}`);
const windowSeconds = z
  .number({ error: 'window_seconds must be an integer' })
  .int('window_seconds must be an integer')
  .min(1, 'window_seconds must be 1 to 3600')
  .max(RULE_LIMITS.maxWindowSeconds, 'window_seconds must be 1 to 3600');
const burst = z
  .number({ error: 'burst must be an integer' })
  .int('burst must be an integer')
  .min(0, 'burst must be at least 0')
  .max(RULE_LIMITS.maxLimit, 'burst must be at most limit');
const status = z.enum(RULE_STATUSES, 'status must be active or disabled');
const action = z.enum(RULE_ACTIONS, 'action must be deny or log_only');

/** A complete rule definition: the body of POST /rate-limits/rules, and a PATCH merged onto the stored rule. */
export const ruleDefinitionSchema = z
  .strictObject({
    name,
    description: description.default(null),
    status: status.default('active'),
    scope: ruleScopeSchema,
    key_by: keyBy,
    limit,
    window_seconds: windowSeconds,
    burst: burst.default(1),
    action: action.default('deny'),
  })
  .superRefine((rule, ctx) => {
    // A limit that is itself invalid already has its issue; comparing burst with it would only add noise.
    const limitValid = Number.isInteger(rule.limit) && rule.limit >= 1;
    if (limitValid && rule.burst > rule.limit)
      ctx.addIssue({ code: 'custom', path: ['burst'], message: `burst must be at most limit (${rule.limit})` });
  });
export type RuleDefinition = z.output<typeof ruleDefinitionSchema>;
export type RuleDefinitionInput = z.input<typeof ruleDefinitionSchema>;

/**
 * Body of PATCH /rate-limits/rules/{id}: only fields present change; `scope` is replaced as a whole. The merged
 * rule is then checked with ruleDefinitionSchema (so burst <= limit holds across the two fields).
 */
export const patchRuleSchema = z.strictObject({
  name: name.optional(),
  description: description.optional(),
  status: status.optional(),
  scope: ruleScopeSchema.optional(),
  key_by: keyBy.optional(),
  limit: limit.optional(),
  window_seconds: windowSeconds.optional(),
  burst: burst.optional(),
  action: action.optional(),
});
export type PatchRuleInput = z.output<typeof patchRuleSchema>;

/** A rule as the API returns it (SPEC 2.5). */
export const ruleSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  description: z.string().nullable(),
  status: status,
  scope: ruleScopeSchema,
  key_by: z.array(z.enum(KEY_BY_VALUES)),
  limit: z.number().int(),
  window_seconds: z.number().int(),
  burst: z.number().int(),
  action,
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
export type RuleView = z.output<typeof ruleSchema>;

/** Body of POST /rate-limits/check (CONTRACT 8): every attribute optional but tool_key. */
export const checkRequestSchema = z.strictObject({
  user_id: z
    .uuid('user_id must be a uuid')
    .transform((id) => id.toLowerCase())
    .optional(),
  agent_slug: z.string().min(1).max(RULE_LIMITS.scopeValueLength).optional(),
  agent_instance_id: z
    .uuid('agent_instance_id must be a uuid')
    .transform((id) => id.toLowerCase())
    .optional(),
  mcp_id: z
    .uuid('mcp_id must be a uuid')
    .transform((id) => id.toLowerCase())
    .optional(),
  tool_key: z
    .string({ error: 'tool_key is required' })
    .min(1, 'tool_key must not be empty')
    .max(RULE_LIMITS.scopeValueLength),
  groups: stringList.optional(),
  agent_slug_tag_ids: uuidList.optional(),
  mcp_tag_ids: uuidList.optional(),
  tool_tag_ids: uuidList.optional(),
  cost: z
    .number({ error: 'cost must be an integer' })
    .int('cost must be an integer')
    .min(1, 'cost must be 1 to 1000')
    .max(1000, 'cost must be 1 to 1000')
    .default(1),
});
export type CheckRequest = z.output<typeof checkRequestSchema>;

/** The decision of a check (CONTRACT 8). */
export const decisionSchema = z.object({
  allowed: z.boolean(),
  retry_after_ms: z.number().int().nullable(),
  denied_by: z.uuid().nullable(),
  rules: z.array(
    z.object({
      rule_id: z.uuid(),
      action,
      limit: z.number().int().describe('C, the calls admitted per derived window'),
      remaining: z.number().int().describe('budget left after this call'),
      reset_at: z.iso.datetime().describe('when the current window ends'),
      exceeded: z.boolean(),
    }),
  ),
});
export type DecisionView = z.output<typeof decisionSchema>;

/** A stored rule, as the limiter and the API services see it. */
export interface RateLimitRule {
  id: string;
  orgId: string;
  name: string;
  description: string | null;
  status: RuleStatus;
  scope: RuleScope;
  keyBy: KeyBy[];
  limit: number;
  windowSeconds: number;
  burst: number;
  action: RuleAction;
  createdAt: Date;
  updatedAt: Date;
}
