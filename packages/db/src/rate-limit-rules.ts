import { ruleScopeSchema, type KeyBy, type RateLimitRule } from '@gatehook/core/rate-limit-rule-schema';
import type { Db } from './client';
import type { RateLimitRule as RateLimitRuleRow } from './generated/client';

/** Maps a stored row to the domain rule. The scope was normalised on save; parsing it again guards old rows. */
export function toRateLimitRule(row: RateLimitRuleRow): RateLimitRule {
  return {
    id: row.id,
    orgId: row.orgId,
    name: row.name,
    description: row.description,
    status: row.status,
    scope: ruleScopeSchema.parse(row.scope),
    keyBy: row.keyBy as KeyBy[],
    limit: row.limit,
    windowSeconds: row.windowSeconds,
    burst: row.burst,
    action: row.action,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** The active rules of an organisation in rule order (created_at, then id): what the limiter enforces. */
export async function loadActiveRules(db: Db, orgId: string): Promise<RateLimitRule[]> {
  const rows = await db.rateLimitRule.findMany({
    where: { orgId, status: 'active' },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  return rows.map(toRateLimitRule);
}
