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
