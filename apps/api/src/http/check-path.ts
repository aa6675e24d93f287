import { checkRequestSchema } from '@gatehook/core/rate-limit-rule-schema';
import type { Decision } from '@gatehook/ratelimit/limiter';
import { rateLimitFields, toDecisionView, type RateLimitCheck } from '../services/rate-limit-check';
import type { ApiKeyCache } from './api-keys';
import { fastHandler, type FastAnswer, type FastHandler } from './fast-path';
import { validateObject } from './validation';

/** The route of the check (CONTRACT 8). */
export const CHECK_ROUTE = '/rate-limits/check';
/** The largest check body read (CONTRACT 3: 1 MB for every body but ingestion). */
const MAX_BODY_BYTES = 1024 * 1024;

export interface CheckPathDeps {
  keys: ApiKeyCache;
  /** The check shared with the gRPC interface (services/rate-limit-check.ts). */
  check: RateLimitCheck;
}

/**
 * The answer to a check over HTTP: the decision, with the RateLimit header fields when a rule matched (CONTRACT 19).
 */
export function checkAnswer(decision: Decision): FastAnswer {
  const fields = rateLimitFields(decision);
  return fields
    ? { status: 200, body: toDecisionView(decision), headers: fields }
    : { status: 200, body: toDecisionView(decision) };
}

/**
 * POST /rate-limits/check with nothing on its path but auth, validation, the limiter and the response (a fast
 * route, ./fast-path.ts): the key and the rules from their caches, the memory store deciding without a promise.
 * No duration histogram (the decisions counter is the check's metric), no throttling (CONTRACT 14 exempts checks).
 */
export function checkPath(deps: CheckPathDeps): FastHandler {
  return fastHandler(deps.keys, {
    path: CHECK_ROUTE,
    access: { kind: 'permission', permission: 'check_rate_limits' },
    maxBodyBytes: MAX_BODY_BYTES,
    answer(principal, body) {
      const decision = deps.check(principal.orgId, validateObject(checkRequestSchema, body), 'http');
      return decision instanceof Promise ? decision.then(checkAnswer) : checkAnswer(decision);
    },
  });
}
