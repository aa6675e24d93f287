import type { AuditEventData } from '@gatehook/core/audit-event';

export type { AuditEventData };

/** The Standard Webhooks envelope of one event, the default request body (SPEC 2.4). */
export interface Envelope {
  type: string;
  timestamp: string;
  data: AuditEventData;
}

/**
 * Wraps an event in its envelope: `type` is the action, `timestamp` the event's created_at (CONTRACT 5), so a
 * retried or re-batched event always carries the same body. `data` is rebuilt from the declared fields in their
 * declared order: the JSON is then identical whichever code path loaded the event, and a caller's extra
 * properties (a row's internal columns) never reach a receiver.
 */
export function toEnvelope(event: AuditEventData): Envelope {
  return {
    type: event.action,
    timestamp: event.created_at,
    data: {
      id: event.id,
      org_id: event.org_id,
      action: event.action,
      actor_type: event.actor_type,
      actor_id: event.actor_id,
      actor_display_name: event.actor_display_name,
      resource_type: event.resource_type,
      resource_id: event.resource_id,
      resource_display_name: event.resource_display_name,
      resources: event.resources,
      context: event.context,
      changes: event.changes,
      payload: event.payload,
      created_at: event.created_at,
    },
  };
}

/** The envelope of an event as compact JSON, ready to be a RenderedEvent's `json`. */
export function renderEnvelope(event: AuditEventData): string {
  return JSON.stringify(toEnvelope(event));
}
