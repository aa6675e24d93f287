import { checkRequestSchema, decisionSchema } from '@gatehook/core/rate-limit-rule-schema';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses } from '../http/schemas';
import { checkAnswer } from '../http/check-path';
import type { RateLimitCheck } from '../services/rate-limit-check';

export interface RateLimitCheckDeps {
  /** The check shared with the fast path and the gRPC interface (services/rate-limit-check.ts). */
  check: RateLimitCheck;
}

/** POST /rate-limits/check (CONTRACT 8): a gateway asks before each tool call. */
export function rateLimitCheckRoutes(deps: RateLimitCheckDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: '/rate-limits/check',
      operationId: 'checkRateLimit',
      tag: 'rate limits',
      summary: 'Check a tool call against every matching rule and consume its budget (atomically, all or nothing)',
      access: { kind: 'permission', permission: 'check_rate_limits' },
      body: checkRequestSchema,
      responses: {
        200: { description: 'The decision (allowed or not)', schema: decisionSchema },
        ...errorResponses(400, 401, 403, 413, 422),
      },
      async handler({ principal, body }) {
        const answer = checkAnswer(await deps.check(principal.orgId, body, 'http'));
        return {
          status: answer.status,
          body: answer.body,
          ...(answer.headers ? { headers: { ...answer.headers } } : {}),
        };
      },
    }),
  ];
}
