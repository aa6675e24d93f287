import type { Redis } from 'ioredis';

/** The pub/sub channel on which rule changes of any organisation are announced (message: the org id). */
export function rulesChannel(prefix: string): string {
  return `${prefix}:rate-limit-rules`;
}

/**
 * Tells every process that an organisation's rules changed, so each drops its cached copy at once. Call it after
 * the change commits. When Redis is unreachable the message is lost; caches then refresh within their TTL.
 */
export async function publishRulesChanged(redis: Redis, prefix: string, orgId: string): Promise<void> {
  await redis.publish(rulesChannel(prefix), orgId);
}
