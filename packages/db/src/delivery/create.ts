/**
 * Creating deliveries. A delivery is created in one of three ways, each one statement:
 * - {@link commitFanout}: fan-out of live events (claims the events from the outbox in the same statement);
 * - {@link commitBatch}: a flush of a webhook's batch buffer (takes the entries out of the buffer in the same
 *   statement);
 * - {@link createReplayedDeliveries}: a replay task's page (in the task's transaction).
 * Every created row starts with no attempt: `attempt_count`, `cycle_attempts` and `throttled_streak` 0. A delivery
 * is created `pending` (due at `next_retry_at`) with a sealed body and the version of the secret values it was
 * rendered with, or `failed` with its `error` and no body (a render error, an event over 1 MB alone): the caller's
 * plan decided which.
 */
import type { Db, Pool, Prisma } from '../client';
import type { DeliveryStatus } from './status';
import { asStatus } from './status';

/** A delivery made from one or more events (a batch), its body rendered and encrypted outside any transaction. */
export interface NewDelivery {
  id: string;
  webhookId: string;
  eventIds: readonly string[];
  status: Extract<DeliveryStatus, 'pending' | 'failed'>;
  bodyEncrypted: string | null;
  contentType: string | null;
  /** The version of the webhook's var and header values the body was rendered with; null without a body. */
  secretsVersion: string | null;
  error: string | null;
  nextRetryAt: Date | null;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** A Postgres array literal of uuids (they need no quoting), for a delivery's event ids in one text parameter. */
const uuidArray = (ids: readonly string[]) => `{${ids.join(',')}}`;

/** The columns every create writes, in the order of the statements' SELECT lists. */
const INSERT_COLUMNS = `id, org_id, webhook_id, status, event_ids, event_count, body_encrypted, content_type, error,
               next_retry_at, created_at, updated_at, secrets_version`;

/**
 * commitFanout: commits a fan-out in one statement.
 *
 * Inputs: the organisation, the event ids the run read, `deliveries` and `batchItems` prepared for them (rendered
 * and sealed beforehand), `now`, and `leasedUntil` when this process attempts the pending deliveries itself.
 * Guards: only events still in `pending_fanout` are claimed (their rows deleted); a delivery is created only when
 * this call claimed every one of its events; a batch entry only for a claimed event (`ON CONFLICT DO NOTHING`). A
 * delivery of several events (a full batch formed by fan-out itself) with an event a racing call claimed sends its
 * events this call did claim to the webhook's batch buffer instead, so none is lost and none is created twice,
 * whatever the queue does (a duplicated job, a reconciler pass).
 * Result: the claimed event ids, the created delivery ids, and the webhooks whose batch buffer got entries. Pending
 * deliveries are created leased until `leasedUntil` (so their first attempt needs no lease statement).
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
             RETURNING p.event_id AS id, p.received_at
           ), given AS MATERIALIZED (
             -- Materialised, so that each delivery's event id list is parsed once.
             SELECT g.*, g.event_ids_text::uuid[] AS event_ids
             FROM unnest($4::uuid[], $5::uuid[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[], $15::text[])
               AS g(id, webhook_id, event_ids_text, status, body, content_type, error, next_retry_at, secrets_version)
           ), missing AS (
             -- Deliveries with an event this call did not claim: one anti-join of every delivery's events against the
             -- claimed ids (hashed), whether there are ten deliveries of 100 events or 1,000 of one.
             SELECT DISTINCT g.id FROM given g CROSS JOIN LATERAL unnest(g.event_ids) AS e(id)
             WHERE NOT EXISTS (SELECT 1 FROM claimed c WHERE c.id = e.id)
           ), x AS (
             SELECT given.*, m.id IS NULL AS whole FROM given LEFT JOIN missing m ON m.id = given.id
           ), d AS (
             INSERT INTO deliveries (${INSERT_COLUMNS}, leased_until)
             SELECT x.id, $1, x.webhook_id, ${asStatus('x.status')}, x.event_ids, cardinality(x.event_ids),
               x.body, x.content_type, x.error, x.next_retry_at, $3, $3, x.secrets_version, CASE WHEN x.status = 'pending' THEN $14::timestamptz END
             FROM x WHERE x.whole
             RETURNING id
           ), b AS (
             -- Each entry carries its event's received_at (from the claimed outbox row), so that the flush reads the
             -- event from its one partition.
             INSERT INTO batch_items (webhook_id, event_id, org_id, created_at, received_at)
             SELECT y.webhook_id, y.event_id, $1, $3, c.received_at
             FROM unnest($12::uuid[], $13::uuid[]) AS y(webhook_id, event_id) JOIN claimed c ON c.id = y.event_id
             UNION ALL
             SELECT x.webhook_id, e.id, $1, $3, c.received_at
             FROM x CROSS JOIN LATERAL unnest(x.event_ids) AS e(id) JOIN claimed c ON c.id = e.id
             WHERE NOT x.whole
             ON CONFLICT DO NOTHING
             RETURNING webhook_id
           )
           SELECT (SELECT string_agg(id::text, ',') FROM claimed) AS claimed, (SELECT string_agg(id::text, ',') FROM d) AS deliveries,
             (SELECT string_agg(DISTINCT webhook_id::text, ',') FROM b) AS buffered`,
    values: [
      input.orgId,
      input.eventIds,
      input.now.toISOString(),
      d.map((x) => x.id),
      d.map((x) => x.webhookId),
      d.map((x) => uuidArray(x.eventIds)),
      d.map((x) => x.status),
      d.map((x) => x.bodyEncrypted),
      d.map((x) => x.contentType),
      d.map((x) => x.error),
      d.map((x) => iso(x.nextRetryAt)),
      input.batchItems.map((b) => b.webhookId),
      input.batchItems.map((b) => b.eventId),
      iso(input.leasedUntil ?? null),
      d.map((x) => x.secretsVersion),
    ],
  });
  const ids = (joined: string | null | undefined) => (joined ? joined.split(',') : []);
  return { claimed: ids(rows[0]?.claimed), deliveries: ids(rows[0]?.deliveries), buffered: ids(rows[0]?.buffered) };
}

/**
 * commitBatch: turns batch-buffer entries into deliveries in one statement, all or nothing.
 *
 * Inputs: the webhook and its organisation, the buffered `eventIds` the flush read, the `deliveries` prepared from
 * them, `now`.
 * Guards: every entry in `eventIds` is still buffered (locked `FOR UPDATE`): another flush did not take them meanwhile.
 * Result: true when the entries left the buffer and the deliveries were created; false, with nothing written, else.
 */
export async function commitBatch(
  pool: Pool,
  input: {
    orgId: string;
    webhookId: string;
    eventIds: readonly string[];
    now: Date;
    deliveries: readonly NewDelivery[];
  },
): Promise<boolean> {
  const d = input.deliveries;
  const { rows } = await pool.query<{ ok: boolean }>({
    name: 'commit_batch',
    text: `WITH locked AS (
             SELECT event_id FROM batch_items WHERE webhook_id = $1 AND event_id = ANY($2::uuid[]) FOR UPDATE
           ), ok AS (
             SELECT count(*) = cardinality($2::uuid[]) AS ok FROM locked
           ), del AS (
             DELETE FROM batch_items WHERE webhook_id = $1 AND event_id = ANY($2::uuid[]) AND (SELECT ok FROM ok)
           ), ins AS (
             INSERT INTO deliveries (${INSERT_COLUMNS})
             SELECT x.id, $3, $1, ${asStatus('x.status')}, string_to_array(x.events, ',')::uuid[],
               cardinality(string_to_array(x.events, ',')), x.body, x.content_type, x.error, x.next_retry_at, $4, $4, x.secrets_version
             FROM unnest($5::uuid[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::text[])
               AS x(id, events, status, body, content_type, error, next_retry_at, secrets_version)
             WHERE (SELECT ok FROM ok)
           )
           SELECT ok FROM ok`,
    values: [
      input.webhookId,
      input.eventIds,
      input.orgId,
      input.now.toISOString(),
      d.map((x) => x.id),
      d.map((x) => x.eventIds.join(',')),
      d.map((x) => x.status),
      d.map((x) => x.bodyEncrypted),
      d.map((x) => x.contentType),
      d.map((x) => x.error),
      d.map((x) => iso(x.nextRetryAt)),
      d.map((x) => x.secretsVersion),
    ],
  });
  return rows[0]?.ok ?? false;
}

/**
 * createReplayedDeliveries: creates a replay task's deliveries in the task's transaction (CONTRACT 11), one statement.
 *
 * Inputs: the webhook and its organisation, the `deliveries` the replay page prepared (each with its send slot as
 * `nextRetryAt`), `now`.
 * Guards: none but the transaction's: the task's lease, locked by the caller, makes a page's deliveries be created
 * once. Replayed deliveries are new rows (new ids), whatever deliveries the events had before.
 * Result: how many rows were created.
 */
export async function createReplayedDeliveries(
  tx: Db | Prisma.TransactionClient,
  input: { orgId: string; webhookId: string; now: Date; deliveries: readonly NewDelivery[] },
): Promise<number> {
  const d = input.deliveries;
  if (d.length === 0) return 0;
  return tx.$executeRawUnsafe(
    `INSERT INTO deliveries (${INSERT_COLUMNS})
     SELECT x.id, $1::uuid, $2::uuid, ${asStatus('x.status')}, x.event_ids::uuid[], cardinality(x.event_ids::uuid[]),
       x.body, x.content_type, x.error, x.next_retry_at, $3::timestamptz, $3::timestamptz, x.secrets_version
     FROM unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::text[])
       AS x(id, event_ids, status, body, content_type, error, next_retry_at, secrets_version)`,
    input.orgId,
    input.webhookId,
    input.now.toISOString(),
    d.map((x) => x.id),
    d.map((x) => uuidArray(x.eventIds)),
    d.map((x) => x.status),
    d.map((x) => x.bodyEncrypted),
    d.map((x) => x.contentType),
    d.map((x) => x.error),
    d.map((x) => iso(x.nextRetryAt)),
    d.map((x) => x.secretsVersion),
  );
}
