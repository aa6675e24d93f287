import { randomUUID } from 'node:crypto';
import type { RedisConnection } from '@gatehook/core/redis';
import { compileCallCondition } from '@gatehook/conditions/call-condition';
import { notFound, validationError } from '@gatehook/core/errors';
import type { Logger } from '@gatehook/core/logger';
import {
  ruleDefinitionSchema,
  type PatchRuleInput,
  type RateLimitRule,
  type RuleDefinition,
  type RuleDefinitionInput,
  type RuleScope,
  type RuleStatus,
  type RuleView,
  RULE_LIMITS,
} from '@gatehook/core/rate-limit-rule-schema';
import type { Change } from '@gatehook/db/audit-events';
import { auditedChange, type CommitHooks } from './commit-hooks';
import type { Db, Prisma } from '@gatehook/db/client';
import { toRateLimitRule } from '@gatehook/db/rate-limit-rules';
import { announceRulesChanged } from '@gatehook/ratelimit/rule-cache';
import { auditFields, type Actor } from '../http/actor';
import { byCreatedAt, listPage } from '../http/pagination';
import { issuesToDetails } from '../http/validation';

export interface RateLimitRuleDeps {
  db: Db;
  /** Where rule changes are announced so that every process drops its cached rules. */
  redis: RedisConnection;
  redisPrefix: string;
  logger: Logger;
  /** After-commit fan-out of the audit events; absent in bare tests. */
  hooks?: CommitHooks;
}

/** The fields of a rule definition, in the order a diff lists them. */
const DEFINITION_FIELDS = [
  'name',
  'description',
  'status',
  'scope',
  'key_by',
  'limit',
  'window_seconds',
  'burst',
  'action',
] as const;

function toDefinition(rule: RateLimitRule): RuleDefinition {
  return {
    name: rule.name,
    description: rule.description,
    status: rule.status,
    scope: rule.scope,
    key_by: rule.keyBy,
    limit: rule.limit,
    window_seconds: rule.windowSeconds,
    burst: rule.burst,
    action: rule.action,
  };
}

/** Maps a stored rule to its API form (SPEC 2.5). */
export function toRuleView(rule: RateLimitRule): RuleView {
  return {
    id: rule.id,
    ...toDefinition(rule),
    created_at: rule.createdAt.toISOString(),
    updated_at: rule.updatedAt.toISOString(),
  };
}

function toColumns(definition: RuleDefinition) {
  return {
    name: definition.name,
    description: definition.description,
    status: definition.status,
    scope: definition.scope as unknown as Prisma.InputJsonValue,
    keyBy: definition.key_by,
    limit: definition.limit,
    windowSeconds: definition.window_seconds,
    burst: definition.burst,
    action: definition.action,
  };
}

/** A non-blank scope condition must compile as a boolean CEL expression over `call`; else a 422 on scope.condition. */
function checkCondition(scope: RuleScope): void {
  if (scope.condition.trim() === '') return;
  const compiled = compileCallCondition(scope.condition);
  if (!compiled.ok)
    throw validationError(compiled.issues.map((issue) => ({ path: 'scope.condition', message: issue.message })));
}

// Payload `{rule_id, rule_name}`, as the event catalogue declares for rate_limit_rule.*.
function auditBase(actor: Actor, rule: { id: string; name: string }) {
  return auditFields(actor, { type: 'rate_limit_rule', payloadKey: 'rule', id: rule.id, name: rule.name });
}

// Locks the row for the rest of the transaction so that concurrent edits produce exact diffs.
async function lockRule(tx: Prisma.TransactionClient, orgId: string, id: string): Promise<RateLimitRule> {
  const locked = await tx.$queryRaw<
    { id: string }[]
  >`SELECT id FROM rate_limit_rules WHERE id = ${id}::uuid AND org_id = ${orgId}::uuid FOR UPDATE`;
  if (locked.length === 0) throw notFound('Rate limit rule');
  return toRateLimitRule(await tx.rateLimitRule.findUniqueOrThrow({ where: { id } }));
}

/**
 * Tells every process to drop its cached rules of the organisation. The change is already committed, so a Redis
 * outage is no reason to fail the request: the warning is logged and caches catch up within their TTL.
 */
async function announce(deps: RateLimitRuleDeps, orgId: string): Promise<void> {
  try {
    await announceRulesChanged(deps.redis, deps.redisPrefix, orgId);
  } catch (error) {
    deps.logger.warn(
      { err: error instanceof Error ? error.message : String(error), org_id: orgId },
      'rate limit rule change not announced; caches refresh on their TTL',
    );
  }
}

/**
 * A check matches every active rule of its organisation, so their number is capped (RULE_LIMITS): making one more
 * rule active past the cap is a 422 on `status`. The organisation's row is locked so that concurrent creations
 * cannot pass the cap together.
 */
async function checkActiveRuleCap(tx: Prisma.TransactionClient, orgId: string): Promise<void> {
  await tx.$queryRaw`SELECT id FROM organizations WHERE id = ${orgId}::uuid FOR UPDATE`;
  const active = await tx.rateLimitRule.count({ where: { orgId, status: 'active' } });
  if (active >= RULE_LIMITS.activeRulesPerOrganisation) {
    throw validationError([
      {
        path: 'status',
        message: `an organisation has at most ${RULE_LIMITS.activeRulesPerOrganisation} active rules; disable or delete one first`,
      },
    ]);
  }
}

/** POST /rate-limits/rules: the body is already a complete definition with the defaults applied. */
export async function createRule(deps: RateLimitRuleDeps, actor: Actor, definition: RuleDefinition): Promise<RuleView> {
  checkCondition(definition.scope);
  const row = await auditedChange(deps, actor.principal.orgId, { webhooks: false }, async (tx, record) => {
    if (definition.status === 'active') await checkActiveRuleCap(tx, actor.principal.orgId);
    const created = await tx.rateLimitRule.create({
      data: { id: randomUUID(), orgId: actor.principal.orgId, ...toColumns(definition) },
    });
    await record({ ...auditBase(actor, created), action: 'rate_limit_rule.created', changes: [] });
    return created;
  });
  await announce(deps, row.orgId);
  return toRuleView(toRateLimitRule(row));
}

export interface RuleListQuery {
  limit: number;
  cursor?: string | undefined;
  status?: RuleStatus | undefined;
}

/** GET /rate-limits/rules: in rule order (created_at, then id, ascending), cursor-paginated. */
export async function listRules(
  deps: RateLimitRuleDeps,
  orgId: string,
  query: RuleListQuery,
): Promise<{ items: RuleView[]; next_cursor: string | null }> {
  return listPage(
    query,
    byCreatedAt('asc'),
    ({ where, ...page }) =>
      deps.db.rateLimitRule.findMany({
        where: { orgId, ...(query.status ? { status: query.status } : {}), ...where },
        ...page,
      }),
    (rows) => rows.map((row) => toRuleView(toRateLimitRule(row))),
  );
}

/** GET /rate-limits/rules/{rule_id}: another organisation's rule is the same 404 as a missing one. */
export async function getRule(deps: RateLimitRuleDeps, orgId: string, id: string): Promise<RuleView> {
  const row = await deps.db.rateLimitRule.findFirst({ where: { id, orgId } });
  if (!row) throw notFound('Rate limit rule');
  return toRuleView(toRateLimitRule(row));
}

/**
 * Merges a PATCH onto the stored definition and checks the result as a whole, so that rules spanning two
 * fields (burst <= limit) hold whichever of them the PATCH names.
 */
function mergePatch(stored: RuleDefinition, patch: PatchRuleInput): RuleDefinition {
  const merged: RuleDefinitionInput = { ...stored };
  for (const field of DEFINITION_FIELDS) {
    if (patch[field] !== undefined) (merged as Record<string, unknown>)[field] = patch[field];
  }
  const result = ruleDefinitionSchema.safeParse(merged);
  if (!result.success) throw validationError(issuesToDetails(result.error.issues));
  return result.data;
}

/**
 * PATCH /rate-limits/rules/{rule_id}: only fields present change, `scope` is replaced whole. A PATCH that changes
 * nothing records no audit event and announces nothing.
 */
export async function updateRule(
  deps: RateLimitRuleDeps,
  actor: Actor,
  id: string,
  patch: PatchRuleInput,
): Promise<RuleView> {
  if (patch.scope) checkCondition(patch.scope);
  const { rule, changed } = await auditedChange(
    deps,
    actor.principal.orgId,
    { webhooks: false },
    async (tx, record) => {
      const current = await lockRule(tx, actor.principal.orgId, id);
      const stored = toDefinition(current);
      const merged = mergePatch(stored, patch);
      const changes: Change[] = DEFINITION_FIELDS.filter(
        (field) => JSON.stringify(stored[field]) !== JSON.stringify(merged[field]),
      ).map((field) => ({ field, old: stored[field], new: merged[field] }));
      if (changes.length === 0) return { rule: current, changed: false };
      if (stored.status !== 'active' && merged.status === 'active') await checkActiveRuleCap(tx, actor.principal.orgId);
      const updated = await tx.rateLimitRule.update({ where: { id }, data: toColumns(merged) });
      await record({ ...auditBase(actor, updated), action: 'rate_limit_rule.updated', changes });
      return { rule: toRateLimitRule(updated), changed: true };
    },
  );
  if (changed) await announce(deps, rule.orgId);
  return toRuleView(rule);
}

/** DELETE /rate-limits/rules/{rule_id}: the rule stops applying once every process has dropped its cached copy. */
export async function deleteRule(deps: RateLimitRuleDeps, actor: Actor, id: string): Promise<void> {
  const orgId = actor.principal.orgId;
  await auditedChange(deps, actor.principal.orgId, { webhooks: false }, async (tx, record) => {
    const current = await lockRule(tx, orgId, id);
    await tx.rateLimitRule.delete({ where: { id } });
    await record({ ...auditBase(actor, current), action: 'rate_limit_rule.deleted', changes: [] });
  });
  await announce(deps, orgId);
}
