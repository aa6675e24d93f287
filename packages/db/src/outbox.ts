import type { AuditEventData } from '@gatehook/core/audit-event';
import type { Pool } from './client';
import type { NewDelivery } from './deliveries';

/** An audit event in the outbox: SPEC 2.4 `data` plus the instant the service received it. */
export interface OutboxEvent {
  data: AuditEventData;
  receivedAt: Date;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/**
 * Stores audit events, skipping ids already stored in any partition (idempotent ingestion), with their
 * `pending_fanout` rows, in one round trip whatever their organisations. Returns the (org, id) pairs actually inserted. The rows travel as
 * one JSON document (`jsonb_to_recordset`): one JSON.stringify of the batch instead of fifteen array literals,
 * each of whose elements the driver would escape and Postgres would parse again (half of the API's CPU per event
 * in 100-event requests). Strings reach here already checked storable (no NUL, no lone surrogate).
 */
export async function insertAuditEvents(pool: Pool, events: readonly OutboxEvent[]): Promise<{ orgId: string; id: string }[]> {
  if (events.length === 0) return [];
  // The events of one request share one receivedAt: it is formatted once, not once per event.
  let last: { at: Date; iso: string } | null = null;
  const rows = events.map(({ data, receivedAt }) => {
    if (last?.at !== receivedAt) last = { at: receivedAt, iso: receivedAt.toISOString() };
    return { ...data, received_at: last.iso };
  });
  // insert_audit_events() (migration 20261126120000_partitioned_history) claims the ids in pending_fanout, then
  // stores those not stored in any partition yet, each step with its own snapshot: audit_events is partitioned by
  // received_at, so no unique index spans an id's partitions.
  const { rows: inserted } = await pool.query<{ org_id: string; id: string }>({
    name: 'insert_audit_events',
    text: 'SELECT org_id, id FROM insert_audit_events($1::jsonb)',
    values: [JSON.stringify(rows)],
  });
  return inserted.map((r) => ({ orgId: r.org_id, id: r.id }));
}

/**
 * An event as the readers select it: SPEC 2.4 `data` column by column, but for its two instants, which come as epoch
 * milliseconds (a float8: exact for milliseconds across years 1 to 9999) instead of timestamps the driver parses
 * into a Date with a regular expression each; `created_at` is then formatted as Date.toISOString() formats it,
 * which is how it was stored (the driver's date parsing was 3 to 4 % of the worker's CPU in a fan-out of 1,000 events).
 */
type EventRow = Omit<AuditEventData, 'resources' | 'context' | 'changes' | 'payload' | 'created_at'> & { resources: unknown; context: unknown; changes: unknown; payload: unknown; created_ms: number; received_ms: number };

const EVENT_SELECT = `e.id, e.org_id, e.action, e.actor_type, e.actor_id, e.actor_display_name, e.resource_type, e.resource_id,
  e.resource_display_name, e.resources, e.context, e.changes, e.payload,
  date_part('epoch', e.created_at) * 1000 AS created_ms, date_part('epoch', e.received_at) * 1000 AS received_ms`;

const asRecord = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

function toOutboxEvent(row: EventRow): OutboxEvent {
  return {
    receivedAt: new Date(Math.round(row.received_ms)),
    data: {
      id: row.id,
      org_id: row.org_id,
      action: row.action,
      actor_type: row.actor_type,
      actor_id: row.actor_id,
      actor_display_name: row.actor_display_name,
      resource_type: row.resource_type,
      resource_id: row.resource_id,
      resource_display_name: row.resource_display_name,
      resources: asRecord(row.resources) as Record<string, string>,
      context: asRecord(row.context),
      changes: Array.isArray(row.changes) ? row.changes : [],
      payload: asRecord(row.payload),
      created_at: new Date(Math.round(row.created_ms)).toISOString(),
    },
  };
}

// Statements that take a list of ids start from the list and look each id up by primary key (a LATERAL … LIMIT 1
// keeps the planner from turning the lookups into a scan of the organisation's rows): with `org_id = $1 AND id =
// ANY($2)`, a planner without fresh statistics (a table that grew faster than autoanalyze) scanned every pending
// event of the organisation and compared each with the whole list, seconds to minutes per fan-out of a large backlog.

/** The events among `ids` of an organisation that are not fanned out yet, ordered by id. No lock is taken. */
export async function readPendingEvents(pool: Pool, orgId: string, ids: readonly string[]): Promise<OutboxEvent[]> {
  const { rows } = await pool.query<EventRow>({
    name: 'read_pending_events',
    text: `SELECT ${EVENT_SELECT} FROM (SELECT DISTINCT unnest($2::uuid[]) AS id) AS k
           CROSS JOIN LATERAL (SELECT p.received_at FROM pending_fanout p WHERE p.org_id = $1 AND p.event_id = k.id LIMIT 1) p
           -- The pending row's received_at is the event's: the lookup prunes to its one partition.
           CROSS JOIN LATERAL (SELECT * FROM audit_events e WHERE e.org_id = $1 AND e.id = k.id AND e.received_at = p.received_at LIMIT 1) e
           ORDER BY e.id`,
    values: [orgId, ids],
  });
  return rows.map(toOutboxEvent);
}

/** Events of an organisation by id, ordered by id (a batch's events, whatever their fan-out state). */
export async function readEvents(pool: Pool, orgId: string, ids: readonly string[]): Promise<OutboxEvent[]> {
  const { rows } = await pool.query<EventRow>({
    name: 'read_events',
    text: `SELECT ${EVENT_SELECT} FROM (SELECT DISTINCT unnest($2::uuid[]) AS id) AS k
           CROSS JOIN LATERAL (SELECT * FROM audit_events e WHERE e.org_id = $1 AND e.id = k.id LIMIT 1) e
           ORDER BY e.id`,
    values: [orgId, ids],
  });
  return rows.map(toOutboxEvent);
}

/** A Postgres array literal of uuids (they need no quoting), for a delivery's event ids in one text parameter. */
const uuidArray = (ids: readonly string[]) => `{${ids.join(',')}}`;

/**
 * Commits a fan-out in one statement: claims the events still not fanned out (deleting their pending rows), and creates the
 * deliveries and batch entries prepared for them, only for the events this call claimed, so a duplicated job or a
 * reconciler pass that raced this one creates nothing twice. A delivery of several events (a full batch formed by
 * fan-out itself) is created only when this call claimed all of its events; its events that this call did claim go to
 * the webhook's batch buffer instead (a racing call claimed the others), so none is lost. Returns the claimed event ids
 * and the created deliveries, and the webhooks whose batch buffer got entries.
 */
export async function commitFanout(
  pool: Pool,
  input: {
    orgId: string;
    eventIds: readonly string[];
    now: Date;
    deliveries: readonly NewDelivery[];
    batchItems: readonly { webhookId: string; eventId: string }[];
    /** Creates the pending deliveries already leased until then, for a run in the calling process. */
    leasedUntil?: Date | null;
  },
): Promise<{ claimed: string[]; deliveries: string[]; buffered: string[] }> {
  const d = input.deliveries;
  // The id lists come back as comma-joined text: one split here, where an array would be parsed element by element.
  const { rows } = await pool.query<{ claimed: string | null; deliveries: string | null; buffered: string | null }>({
    name: 'commit_fanout',
    text: `WITH claimed AS (
             DELETE FROM pending_fanout p USING unnest($2::uuid[]) AS k(id)
             WHERE p.org_id = $1 AND p.event_id = k.id
             RETURNING p.event_id AS id
           ), given AS MATERIALIZED (
             -- Materialised, so that each delivery's event id list is parsed once.
             SELECT g.*, g.event_ids_text::uuid[] AS event_ids
             FROM unnest($4::uuid[], $5::uuid[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[])
               AS g(id, webhook_id, event_ids_text, status, body, content_type, error, next_retry_at)
           ), missing AS (
             -- Deliveries with an event this call did not claim: one anti-join of every delivery's events against the
             -- claimed ids (hashed), whether there are ten deliveries of 100 events or 1,000 of one.
             SELECT DISTINCT g.id FROM given g CROSS JOIN LATERAL unnest(g.event_ids) AS e(id)
             WHERE NOT EXISTS (SELECT 1 FROM claimed c WHERE c.id = e.id)
           ), x AS (
             SELECT given.*, m.id IS NULL AS whole FROM given LEFT JOIN missing m ON m.id = given.id
           ), d AS (
             INSERT INTO deliveries (id, org_id, webhook_id, status, event_ids, event_count, body_encrypted, content_type, error,
               next_retry_at, created_at, updated_at, leased_until)
             SELECT x.id, $1, x.webhook_id, x.status::"DeliveryStatus", x.event_ids, cardinality(x.event_ids),
               x.body, x.content_type, x.error, x.next_retry_at, $3, $3, CASE WHEN x.status = 'pending' THEN $14::timestamptz END
             FROM x WHERE x.whole
             RETURNING id
           ), b AS (
             INSERT INTO batch_items (webhook_id, event_id, org_id, created_at)
             SELECT y.webhook_id, y.event_id, $1, $3 FROM unnest($12::uuid[], $13::uuid[]) AS y(webhook_id, event_id)
             WHERE y.event_id IN (SELECT id FROM claimed)
             UNION ALL
             SELECT x.webhook_id, e.id, $1, $3 FROM x CROSS JOIN LATERAL unnest(x.event_ids) AS e(id)
             WHERE NOT x.whole AND e.id IN (SELECT id FROM claimed)
             ON CONFLICT DO NOTHING
             RETURNING webhook_id
           )
           SELECT (SELECT string_agg(id::text, ',') FROM claimed) AS claimed, (SELECT string_agg(id::text, ',') FROM d) AS deliveries,
             (SELECT string_agg(DISTINCT webhook_id::text, ',') FROM b) AS buffered`,
    values: [
      input.orgId, input.eventIds, input.now.toISOString(),
      d.map((x) => x.id), d.map((x) => x.webhookId), d.map((x) => uuidArray(x.eventIds)), d.map((x) => x.status), d.map((x) => x.bodyEncrypted),
      d.map((x) => x.contentType), d.map((x) => x.error), d.map((x) => iso(x.nextRetryAt)),
      input.batchItems.map((b) => b.webhookId), input.batchItems.map((b) => b.eventId), iso(input.leasedUntil ?? null),
    ],
  });
  const ids = (joined: string | null | undefined) => (joined ? joined.split(',') : []);
  return { claimed: ids(rows[0]?.claimed), deliveries: ids(rows[0]?.deliveries), buffered: ids(rows[0]?.buffered) };
}
