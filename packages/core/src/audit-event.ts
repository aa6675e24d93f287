/** An audit event as the audit log stores it: SPEC 2.4 `data`, what is delivered and what conditions see. */
export interface AuditEventData {
  id: string;
  org_id: string;
  action: string;
  actor_type: string;
  actor_id: string;
  actor_display_name: string;
  resource_type: string;
  resource_id: string;
  resource_display_name: string;
  resources: Record<string, string>;
  context: Record<string, unknown>;
  changes: unknown[];
  payload: Record<string, unknown>;
  /** ISO 8601 UTC with milliseconds. */
  created_at: string;
}

/** An audit event's fields as a store or a request hands them over: its JSON fields not yet checked for shape. */
export type AuditEventFields = Omit<AuditEventData, 'resources' | 'context' | 'changes' | 'payload'> & {
  resources: unknown;
  context: unknown;
  changes: unknown;
  payload: unknown;
};

/** What identifies an event and when it happened: its id, its organisation, its `created_at`. */
export type EventIdentity = Pick<AuditEventData, 'id' | 'org_id' | 'created_at'>;

const asRecord = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/**
 * The one mapping of an audit event to SPEC 2.4 `data`, whatever loaded it (ingestion, the outbox, a replay page,
 * an envelope): the declared fields in their declared order, so that the JSON is identical whichever path loaded
 * the event and a source's extra properties (a row's internal columns) never reach a receiver; a JSON field of
 * the wrong shape becomes empty.
 */
export function toAuditEventData(fields: AuditEventFields): AuditEventData;
/**
 * The same with the event's identity given apart from its other fields (ingestion, a row whose instant needs
 * formatting), rather than as `{ ...fields, id, org_id, created_at }`: on Node 20, a literal that adds keys after a
 * spread costs about a microsecond a key, per event.
 */
export function toAuditEventData(
  fields: Omit<AuditEventFields, keyof EventIdentity>,
  identity: EventIdentity,
): AuditEventData;
export function toAuditEventData(
  fields: Omit<AuditEventFields, keyof EventIdentity> & Partial<EventIdentity>,
  identity?: EventIdentity,
): AuditEventData {
  const own = identity ?? (fields as EventIdentity);
  return {
    id: own.id,
    org_id: own.org_id,
    action: fields.action,
    actor_type: fields.actor_type,
    actor_id: fields.actor_id,
    actor_display_name: fields.actor_display_name,
    resource_type: fields.resource_type,
    resource_id: fields.resource_id,
    resource_display_name: fields.resource_display_name,
    resources: asRecord(fields.resources) as Record<string, string>,
    context: asRecord(fields.context),
    changes: Array.isArray(fields.changes) ? fields.changes : [],
    payload: asRecord(fields.payload),
    created_at: own.created_at,
  };
}
