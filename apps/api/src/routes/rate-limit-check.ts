import type { Counter } from 'prom-client';
import { checkRequestSchema, decisionSchema } from '@gatehook/core/rate-limit-rule-schema';
import type { RateLimiter } from '@gatehook/ratelimit/limiter';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses } from '../http/schemas';
import { toDecisionView } from '../services/rate-limit-check';

export interface RateLimitCheckDeps {
  limiter: RateLimiter;
  /** gatehook_rate_limit_decisions_total{outcome, source}. */
  decisions: Counter<'outcome' | 'source'>;
}

/** POST /rate-limits/check (CONTRACT 8): a gateway asks before each tool call. */
export function rateLimitCheckRoutes(deps: RateLimitCheckDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/rate-limits/check', operationId: 'checkRateLimit', tag: 'rate limits',
      summary: 'Check a tool call against every matching rule and consume its budget (atomically, all or nothing)',
      access: { kind: 'permission', permission: 'check_rate_limits' },
      body: checkRequestSchema,
      responses: { 200: { description: 'The decision (allowed or not)', schema: decisionSchema }, ...errorResponses(400, 401, 403, 413, 422) },
      async handler({ principal, body }) {
        const decision = await deps.limiter.check(principal.orgId, body);
        deps.decisions.inc({ outcome: decision.allowed ? 'allowed' : 'denied', source: decision.source });
        return { status: 200, body: toDecisionView(decision) };
      },
    }),
  ];
}
