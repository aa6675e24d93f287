import { redisTarget } from '@gatehook/core/redis';
import type { InvalidationBus } from '@gatehook/cache/invalidation';
import type { Config } from '@gatehook/core/config';
import type { DecisionView } from '@gatehook/core/rate-limit-rule-schema';
import { recordAuditEvent } from '@gatehook/db/audit-events';
import type { Db } from '@gatehook/db/client';
import { loadActiveRules } from '@gatehook/db/rate-limit-rules';
import type { DeliveryQueues } from '@gatehook/delivery/jobs';
import type { Decision, ExceededEvent } from '@gatehook/ratelimit/limiter';
import type { LimiterLogger } from '@gatehook/ratelimit/rule-cache';
import { startRateLimiter, type RunningRateLimiter } from '@gatehook/ratelimit/start';

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
    memoryCounters: { perOrganisation: config.RATE_LIMIT_MEMORY_COUNTERS_PER_ORG, total: config.RATE_LIMIT_MEMORY_COUNTERS },
    ...(options.bus ? { bus: options.bus } : {}),
    onExceeded: exceededRecorder(db, options.queues),
    ...(options.logger ? { logger: options.logger } : {}),
  });
}
