import type { AuditEvent } from '@gatehook/db/generated/client';
import type { AuditEventData } from './envelope';

const asRecord = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** A stored audit event as SPEC 2.4 `data`: the audit event exactly as the audit log stores it. */
export function toEventData(row: AuditEvent): AuditEventData {
  return {
    id: row.id,
    org_id: row.orgId,
    action: row.action,
    actor_type: row.actorType,
    actor_id: row.actorId,
    actor_display_name: row.actorDisplayName,
    resource_type: row.resourceType,
    resource_id: row.resourceId,
    resource_display_name: row.resourceDisplayName,
    resources: asRecord(row.resources) as Record<string, string>,
    context: asRecord(row.context),
    changes: Array.isArray(row.changes) ? row.changes : [],
    payload: asRecord(row.payload),
    created_at: row.createdAt.toISOString(),
  };
}
