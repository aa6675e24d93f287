import type { Counter } from 'prom-client';
import { checkRequestSchema } from '@gatehook/core/rate-limit-rule-schema';
import { annotateSpan } from '@gatehook/core/tracing';
import type { Decision, RateLimiter } from '@gatehook/ratelimit/limiter';
import { toDecisionView } from '../services/rate-limit-check';
import type { ApiKeyCache } from './api-keys';
import { fastHandler, type FastAnswer, type FastHandler } from './fast-path';
import { validateObject } from './validation';

/** The route of the check (CONTRACT 8). */
export const CHECK_ROUTE = '/rate-limits/check';
/** The largest check body read (CONTRACT 3: 1 MB for every body but ingestion). */
const MAX_BODY_BYTES = 1024 * 1024;

export interface CheckPathDeps {
  keys: ApiKeyCache;
  limiter: RateLimiter;
  /** gatehook_rate_limit_decisions_total{outcome, source}. */
  decisions: Counter<'outcome' | 'source'>;
}

/**
 * POST /rate-limits/check with nothing on its path but auth, validation, the limiter and the response (a fast
 * route, ./fast-path.ts): the key and the rules from their caches, the memory store deciding without a promise.
 * No duration histogram (the decisions counter is the check's metric), no throttling (CONTRACT 14 exempts checks).
 */
export function checkPath(deps: CheckPathDeps): FastHandler {
  const answer = (decision: Decision): FastAnswer => {
    deps.decisions.inc({ outcome: decision.allowed ? 'allowed' : 'denied', source: decision.source });
    annotateSpan({ 'gatehook.rate_limit.allowed': decision.allowed, 'gatehook.rate_limit.source': decision.source });
    return { status: 200, body: toDecisionView(decision) };
  };
  return fastHandler(deps.keys, {
    path: CHECK_ROUTE,
    access: { kind: 'permission', permission: 'check_rate_limits' },
    maxBodyBytes: MAX_BODY_BYTES,
    answer(principal, body) {
      const decision = deps.limiter.decide(principal.orgId, validateObject(checkRequestSchema, body));
      return decision instanceof Promise ? decision.then(answer) : answer(decision);
    },
  });
}

