import { randomUUID } from 'node:crypto';
import { generateApiKey, hashApiKey } from '@gatehook/core/api-keys';
import { within } from '@gatehook/core/readiness';
import { redisTarget } from '@gatehook/core/redis';
import type { InvalidationBus } from '@gatehook/cache/invalidation';
import type { Config } from '@gatehook/core/config';
import type { Counter } from 'prom-client';
import type { DecisionView } from '@gatehook/core/rate-limit-rule-schema';
import { annotateSpan } from '@gatehook/core/tracing';
import { findPrincipalByHash } from '@gatehook/db/api-keys';
import { recordAuditEvent } from '@gatehook/db/audit-events';
import type { Db } from '@gatehook/db/client';
import { loadActiveRules } from '@gatehook/db/rate-limit-rules';
import type { DeliveryQueues } from '@gatehook/delivery';
import type { Decision, ExceededEvent, RateLimiter, RuleOutcome } from '@gatehook/ratelimit/limiter';
import type { ToolCall } from '@gatehook/ratelimit/scope';
import type { LimiterLogger } from '@gatehook/ratelimit/rule-cache';
import { startRateLimiter, type RunningRateLimiter } from '@gatehook/ratelimit/start';

/** The interface a check came in by (the `interface` label of the decisions metric). */
export type CheckInterface = 'http' | 'grpc';

/** gatehook_rate_limit_decisions_total{outcome, source, interface}. */
export type DecisionCounter = Counter<'outcome' | 'source' | 'interface'>;

/**
 * The one check behind `POST /rate-limits/check` and Envoy's `ShouldRateLimit` (CONTRACT 8, 19): the limiter's
 * decision (same rules, counters, atomicity and rate_limit.exceeded events whatever the interface), counted in the
 * decisions metric and written on the span of the request or call it runs in. Without a promise when the limiter
 * decides without one.
 */
export type RateLimitCheck = (orgId: string, call: ToolCall, via: CheckInterface) => Decision | Promise<Decision>;

/** Builds the {@link RateLimitCheck} of a limiter and the process's decisions counter. */
export function rateLimitCheck(limiter: RateLimiter, decisions: DecisionCounter): RateLimitCheck {
  const record = (decision: Decision, via: CheckInterface): Decision => {
    decisions.inc({ outcome: decision.allowed ? 'allowed' : 'denied', source: decision.source, interface: via });
    annotateSpan({ 'gatehook.rate_limit.allowed': decision.allowed, 'gatehook.rate_limit.source': decision.source });
    return decision;
  };
  return (orgId, call, via) => {
    const decision = limiter.decide(orgId, call);
    return decision instanceof Promise ? decision.then((d) => record(d, via)) : record(decision, via);
  };
}

/**
 * The tightest of a decision's matching rules (CONTRACT 19): the least remaining, then the smallest budget C, then
 * the first created (the decision lists rules in order of creation). Null when no rule matched.
 */
export function tightestRule(decision: Decision): RuleOutcome | null {
  let tightest: RuleOutcome | null = null;
  for (const outcome of decision.rules) {
    if (
      tightest === null ||
      outcome.remaining < tightest.remaining ||
      (outcome.remaining === tightest.remaining && outcome.limit < tightest.limit)
    ) {
      tightest = outcome;
    }
  }
  return tightest;
}

/** Whole seconds from `now` until `at` (ms), rounded up; never negative. */
export function secondsUntil(at: number, now: number): number {
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** The IETF RateLimit header fields of a decision (names as sent), or null when no rule matched. */
export type RateLimitFields = {
  'RateLimit-Policy': string;
  RateLimit: string;
};

/**
 * The RateLimit fields of a decision in structured-field syntax (CONTRACT 19): `RateLimit-Policy` lists every
 * matching rule in order of creation as `"<rule id>";q=<C>;w=<T in whole seconds, rounded up>`, `RateLimit` names
 * the tightest as `"<rule id>";r=<remaining>;t=<seconds until its window resets, rounded up>`. Rule ids are uuids,
 * so they need no escaping inside the quoted strings.
 */
export function rateLimitFields(decision: Decision): RateLimitFields | null {
  const tightest = tightestRule(decision);
  if (tightest === null) return null;
  let policy = '';
  for (const outcome of decision.rules) {
    if (policy !== '') policy += ', ';
    policy += `"${outcome.rule.id}";q=${outcome.limit};w=${Math.ceil(outcome.windowMs / 1000)}`;
  }
  return {
    'RateLimit-Policy': policy,
    RateLimit: `"${tightest.rule.id}";r=${tightest.remaining};t=${secondsUntil(tightest.resetAt, decision.now)}`,
  };
}

/** The decision of CONTRACT 8 as the API returns it. */
export function toDecisionView(decision: Decision): DecisionView {
  return {
    allowed: decision.allowed,
    retry_after_ms: decision.retryAfterMs,
    denied_by: decision.deniedBy,
    rules: decision.rules.map((outcome) => ({
      rule_id: outcome.rule.id,
      action: outcome.rule.action,
      limit: outcome.limit,
      remaining: outcome.remaining,
      reset_at: new Date(outcome.resetAt).toISOString(),
      exceeded: outcome.exceeded,
    })),
  };
}

/**
 * Records rate_limit.exceeded (once per rule, key and window, as the limiter reports it) and hands it to fan-out
 * like any audit event; without a queue the worker's reconciler picks it up.
 */
export function exceededRecorder(db: Db, queues?: DeliveryQueues): (event: ExceededEvent) => Promise<void> {
  return async ({ orgId, rule, key, call, denied }) => {
    const actor = call.user_id
      ? { actorType: 'user' as const, actorId: call.user_id }
      : call.agent_instance_id
        ? { actorType: 'agent' as const, actorId: call.agent_instance_id }
        : { actorType: 'system' as const };
    const resources: Record<string, string> = { tool_key: call.tool_key };
    if (call.mcp_id) resources.mcp_id = call.mcp_id;
    if (call.agent_slug) resources.agent_slug = call.agent_slug;
    if (call.agent_instance_id) resources.agent_instance_id = call.agent_instance_id;
    const id = await recordAuditEvent(db, {
      orgId,
      action: 'rate_limit.exceeded',
      ...actor,
      resourceType: 'rate_limit_rule',
      resourceId: rule.id,
      resourceDisplayName: rule.name,
      resources,
      payload: {
        rule_id: rule.id,
        rule_name: rule.name,
        rule_action: rule.action,
        limit: rule.limit,
        window_seconds: rule.windowSeconds,
        key,
        call: { ...call },
        denied,
      },
    });
    await queues?.fanout(orgId, [id]).catch(() => undefined);
  };
}

/** Starts the limiter the configuration describes, with rules from Postgres and exceedances audited. */
export function startConfiguredRateLimiter(
  config: Config,
  db: Db,
  options: { queues?: DeliveryQueues | undefined; logger?: LimiterLogger; bus?: InvalidationBus } = {},
): Promise<RunningRateLimiter> {
  return startRateLimiter({
    source: (orgId) => loadActiveRules(db, orgId),
    redis: redisTarget(config),
    prefix: config.REDIS_PREFIX,
    store: config.RATE_LIMIT_STORE,
    failMode: config.RATE_LIMIT_FAIL_MODE,
    redisTimeoutMs: config.RATE_LIMIT_REDIS_TIMEOUT_MS,
    memoryCounters: {
      perOrganisation: config.RATE_LIMIT_MEMORY_COUNTERS_PER_ORG,
      total: config.RATE_LIMIT_MEMORY_COUNTERS,
    },
    ...(options.bus ? { bus: options.bus } : {}),
    onExceeded: exceededRecorder(db, options.queues),
    ...(options.logger ? { logger: options.logger } : {}),
  });
}

/** How long start-up waits for {@link warmCheckQueries} before going on without it. */
const WARM_QUERIES_MS = 5_000;

/**
 * Runs the check path's two reads once, for a random key hash and a random organisation id (they match nothing):
 * Prisma compiles a query's plan the first time it runs (a few hundred ms of CPU for these two), which would
 * otherwise fall on the first check after a start. Never throws; resolves to whether both ran within 5 s.
 */
export async function warmCheckQueries(db: Db): Promise<boolean> {
  const reads = Promise.all([findPrincipalByHash(db, hashApiKey(generateApiKey())), loadActiveRules(db, randomUUID())]);
  return within(reads, WARM_QUERIES_MS).then(
    () => true,
    () => false,
  );
}
