import { toAuditEventData, type AuditEventData } from '@gatehook/core/audit-event';

export type { AuditEventData };

/** The Standard Webhooks envelope of one event, the default request body (SPEC 2.4). */
export interface Envelope {
  type: string;
  timestamp: string;
  data: AuditEventData;
}

/**
 * Wraps an event in its envelope: `type` is the action, `timestamp` the event's created_at (CONTRACT 5), so a
 * retried or re-batched event always carries the same body. `data` goes through the one event mapper
 * (`toAuditEventData`), so its JSON is the same whichever code path loaded the event.
 */
export function toEnvelope(event: AuditEventData): Envelope {
  return {
    type: event.action,
    timestamp: event.created_at,
    data: toAuditEventData(event),
  };
}

/** The envelope of an event as compact JSON, ready to be a RenderedEvent's `json`. */
export function renderEnvelope(event: AuditEventData): string {
  return JSON.stringify(toEnvelope(event));
}
