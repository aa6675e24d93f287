import { z } from 'zod';
import {
  patchRuleSchema,
  RULE_STATUSES,
  ruleDefinitionSchema,
  ruleSchema,
} from '@gatehook/core/rate-limit-rule-schema';
import { actorOf } from '../http/actor';
import { pageQuery } from '../http/pagination';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses } from '../http/schemas';
import {
  createRule,
  deleteRule,
  getRule,
  listRules,
  updateRule,
  type RateLimitRuleDeps,
} from '../services/rate-limit-rules';

/** `{rule_id}` path parameter: a malformed uuid is a 404 like an unknown one. */
const ruleIdParams = z.object({ rule_id: z.uuid() });
const listSchema = z.object({ items: z.array(ruleSchema), next_cursor: z.string().nullable() });

/** Rate limit rule management routes (CONTRACT section 8); the check route lives in rate-limit-check.ts. */
export function rateLimitRuleRoutes(deps: RateLimitRuleDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/rate-limits/rules',
      operationId: 'listRateLimitRules',
      tag: 'rate-limits',
      summary: 'List rate limit rules in rule order (oldest first)',
      access: { kind: 'permission', permission: 'view_rate_limits' },
      query: z.object({ ...pageQuery, status: z.enum(RULE_STATUSES).optional() }),
      responses: { 200: { description: 'A page of rules', schema: listSchema }, ...errorResponses(400, 401, 403) },
      async handler({ principal, query }) {
        return { status: 200, body: await listRules(deps, principal.orgId, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/rate-limits/rules/{rule_id}',
      operationId: 'getRateLimitRule',
      tag: 'rate-limits',
      summary: 'Get a rate limit rule',
      access: { kind: 'permission', permission: 'view_rate_limits' },
      params: ruleIdParams,
      responses: { 200: { description: 'The rule', schema: ruleSchema }, ...errorResponses(401, 403, 404) },
      async handler({ principal, params }) {
        return { status: 200, body: await getRule(deps, principal.orgId, params.rule_id) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/rate-limits/rules',
      operationId: 'createRateLimitRule',
      tag: 'rate-limits',
      summary: 'Create a rate limit rule',
      access: { kind: 'permission', permission: 'manage_rate_limits' },
      body: ruleDefinitionSchema,
      responses: { 201: { description: 'Created', schema: ruleSchema }, ...errorResponses(400, 401, 403, 413, 422) },
      async handler({ req, principal, body }) {
        return { status: 201, body: await createRule(deps, actorOf(principal, req), body) };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/rate-limits/rules/{rule_id}',
      operationId: 'updateRateLimitRule',
      tag: 'rate-limits',
      summary: 'Edit a rate limit rule: only fields present change, scope is replaced whole',
      access: { kind: 'permission', permission: 'manage_rate_limits' },
      params: ruleIdParams,
      body: patchRuleSchema,
      responses: {
        200: { description: 'The updated rule', schema: ruleSchema },
        ...errorResponses(400, 401, 403, 404, 413, 422),
      },
      async handler({ req, principal, params, body }) {
        return { status: 200, body: await updateRule(deps, actorOf(principal, req), params.rule_id, body) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/rate-limits/rules/{rule_id}',
      operationId: 'deleteRateLimitRule',
      tag: 'rate-limits',
      summary: 'Delete a rate limit rule',
      access: { kind: 'permission', permission: 'manage_rate_limits' },
      params: ruleIdParams,
      responses: { 204: { description: 'Deleted' }, ...errorResponses(401, 403, 404) },
      async handler({ req, principal, params }) {
        await deleteRule(deps, actorOf(principal, req), params.rule_id);
        return { status: 204 };
      },
    }),
  ];
}
