import { toAuditEventData, type AuditEventData } from '@gatehook/core/audit-event';
import type { PoolClient } from 'pg';
import type { Pool } from './client';

/** An audit event in the outbox: SPEC 2.4 `data` plus the instant the service received it. */
export interface OutboxEvent {
  data: AuditEventData;
  receivedAt: Date;
  /**
   * The service generated the id (a fresh UUIDv7) rather than the client: no event was stored with it before, so
   * ingestion does not look for one. Only ever set by the service itself, never from a request's fields.
   */
  generatedId?: boolean;
}

/**
 * Stores audit events, skipping ids already stored in any partition (idempotent ingestion), with their
 * `pending_fanout` rows, in one round trip whatever their organisations. Returns the (org, id) pairs actually inserted.
 * The rows travel as one JSON document (`jsonb_to_recordset`): one JSON.stringify of the batch instead of fifteen
 * array literals, each of whose elements the driver would escape and Postgres would parse again. Strings reach here already
 * checked storable (no NUL, no lone surrogate).
 */
export async function insertAuditEvents(
  pool: Pool | PoolClient,
  events: readonly OutboxEvent[],
): Promise<{ orgId: string; id: string }[]> {
  if (events.length === 0) return [];
  // The events of one request share one receivedAt: it is formatted once, not once per event.
  let last: { at: Date; iso: string } | null = null;
  const rows = events.map(({ data, receivedAt, generatedId }) => {
    if (last?.at !== receivedAt) last = { at: receivedAt, iso: receivedAt.toISOString() };
    // The added keys go before the spread: after it, Node 20 adds each at about a microsecond (`data` has neither).
    return generatedId ? { received_at: last.iso, generated_id: true, ...data } : { received_at: last.iso, ...data };
  });
  // insert_audit_events() (prisma/migrations, as 20261129000000_chosen_v7_id_probe last made it) claims the ids in
  // pending_fanout, then stores those not stored in any partition yet, each step with its own snapshot: audit_events
  // is partitioned by received_at, so no unique index spans an id's partitions. Only the ids a client chose are looked
  // for in the partitions (a UUIDv7 one only from its own instant less a day on); a generated one (`generated_id`)
  // cannot have been stored before. Its statements run from one generic plan per session
  // (20261129120000_generic_plans_for_id_lookups).
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
 * which is how it was stored.
 */
export type EventRow = Omit<AuditEventData, 'resources' | 'context' | 'changes' | 'payload' | 'created_at'> & {
  resources: unknown;
  context: unknown;
  changes: unknown;
  payload: unknown;
  created_ms: number;
  received_ms: number;
};

export const EVENT_SELECT = `e.id, e.org_id, e.action, e.actor_type, e.actor_id, e.actor_display_name, e.resource_type, e.resource_id,
  e.resource_display_name, e.resources, e.context, e.changes, e.payload,
  date_part('epoch', e.created_at) * 1000 AS created_ms, date_part('epoch', e.received_at) * 1000 AS received_ms`;

/** Maps an event row as the readers select it ({@link EVENT_SELECT}). */
export function toOutboxEvent(row: EventRow): OutboxEvent {
  return {
    receivedAt: new Date(Math.round(row.received_ms)),
    data: toAuditEventData(row, {
      id: row.id,
      org_id: row.org_id,
      created_at: new Date(Math.round(row.created_ms)).toISOString(),
    }),
  };
}

// Statements that take a list of ids start from the list and look each id up by primary key (a LATERAL … LIMIT 1
// keeps the planner from turning the lookups into a scan of the organisation's rows): with `org_id = $1 AND id =
// ANY($2)`, a planner without fresh statistics (a table that grew faster than autoanalyze) scanned every pending
// event of the organisation and compared each with the whole list, seconds to minutes per fan-out of a large backlog.

/**
 * The events among `ids` of an organisation that are not fanned out yet, ordered by id. No lock is taken. The
 * statement is gatehook_read_pending_events() (prisma/migrations/20261129120000_generic_plans_for_id_lookups), a
 * function so that it runs from one generic plan per session instead of being planned at every call.
 */
export async function readPendingEvents(pool: Pool, orgId: string, ids: readonly string[]): Promise<OutboxEvent[]> {
  const { rows } = await pool.query<EventRow>({
    name: 'read_pending_events',
    text: 'SELECT * FROM gatehook_read_pending_events($1, $2::uuid[])',
    values: [orgId, ids],
  });
  return rows.map(toOutboxEvent);
}

/**
 * readEvents' statement: $1 the organisation, $2 and $3 the ids with their received_at, $4 the ids without.
 * Exported for the test of its plan (partitions.test.ts).
 */
export const READ_EVENTS = `SELECT ${EVENT_SELECT} FROM (SELECT DISTINCT ON (t.id) t.id, t.received_at FROM unnest($2::uuid[], $3::timestamptz[]) AS t(id, received_at)) AS k
           -- Equality on the partition key: each lookup is pruned, at run time, to the partition of that instant.
           CROSS JOIN LATERAL (SELECT * FROM audit_events e WHERE e.org_id = $1 AND e.id = k.id AND e.received_at = k.received_at LIMIT 1) e
           UNION ALL
           SELECT ${EVENT_SELECT} FROM (SELECT DISTINCT unnest($4::uuid[]) AS id) AS k
           CROSS JOIN LATERAL (SELECT * FROM audit_events e WHERE e.org_id = $1 AND e.id = k.id LIMIT 1) e
           ORDER BY id`;

/** An event's key: its id, and its received_at when known (the partition key of audit_events). */
export interface EventKey {
  id: string;
  receivedAt: Date | null;
}

/**
 * Events of an organisation by key, ordered by id (a batch's events, whatever their fan-out state). A key with its
 * received_at is looked up in its one partition; one without (a batch entry buffered before entries carried it) in
 * every partition, one index probe each, whose number grows with the history kept.
 */
export async function readEvents(pool: Pool, orgId: string, keys: readonly EventKey[]): Promise<OutboxEvent[]> {
  const timedIds: string[] = [];
  const timedAt: string[] = [];
  const untimed: string[] = [];
  for (const key of keys) {
    if (key.receivedAt === null) untimed.push(key.id);
    else {
      timedIds.push(key.id);
      timedAt.push(key.receivedAt.toISOString());
    }
  }
  const { rows } = await pool.query<EventRow>({
    name: 'read_events',
    text: READ_EVENTS,
    values: [orgId, timedIds, timedAt, untimed],
  });
  return rows.map(toOutboxEvent);
}
