-- Deliveries, their attempts and audit events move into time-partitioned tables (docs/database.md, "Partitioned
-- history"), in one transaction: each table is renamed aside, a partitioned table of the same name and columns is
-- created with a DEFAULT partition and day partitions, the rows are copied, the keys and indexes are built, and the
-- old table is dropped.
--
-- deliveries        PARTITION BY RANGE (id): delivery ids are UUIDv7, whose first 48 bits are the creation time in
--                   milliseconds, so an id range is a time range and a lookup by id touches one partition.
-- delivery_attempts PARTITION BY RANGE (delivery_id), with the same bounds: a delivery and its attempts live and
--                   are dropped together. The foreign key to deliveries is not kept (detaching a referenced
--                   partition would check every attempt); an attempt is written only under its delivery's lease.
-- audit_events      PARTITION BY RANGE (received_at): replay reads by it; the key (org_id, id, received_at)
--                   cannot make ids unique across partitions, so idempotent ingestion is decided by
--                   insert_audit_events() below, against pending_fanout and every partition.
--
-- Pre-upgrade delivery ids are random (UUIDv4): they land in deliveries_default, which the retention sweep empties
-- row by row as they age. Day partitions are created here for 38 days ahead (the default retention, a week ahead
-- and one more day), so that the worker creates none while the DEFAULT partition still holds those rows (creating
-- a partition scans the DEFAULT partition).

-- The lowest UUIDv7 of an instant: its Unix milliseconds in the first 48 bits, every other bit zero.
CREATE FUNCTION pg_temp.v7_floor(t timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-0000-0000-000000000000')::uuid
  FROM (SELECT lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') AS h) AS x
$$;

-- Old tables aside: their constraints and indexes are dropped or renamed so the new ones take Prisma's names.
ALTER TABLE "delivery_attempts" DROP CONSTRAINT "delivery_attempts_delivery_id_fkey";
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_webhook_id_fkey";
DROP INDEX "deliveries_webhook_id_created_at_id_idx";
DROP INDEX "deliveries_webhook_id_status_created_at_idx";
DROP INDEX "deliveries_status_next_retry_at_idx";
DROP INDEX "deliveries_created_at_idx";
DROP INDEX "delivery_attempts_delivery_id_id_idx";
DROP INDEX "audit_events_org_id_received_at_id_idx";
ALTER TABLE "deliveries" RENAME CONSTRAINT "deliveries_pkey" TO "deliveries_unpartitioned_pkey";
ALTER TABLE "delivery_attempts" RENAME CONSTRAINT "delivery_attempts_pkey" TO "delivery_attempts_unpartitioned_pkey";
ALTER TABLE "audit_events" RENAME CONSTRAINT "audit_events_pkey" TO "audit_events_unpartitioned_pkey";
ALTER TABLE "deliveries" RENAME TO "deliveries_unpartitioned";
ALTER TABLE "delivery_attempts" RENAME TO "delivery_attempts_unpartitioned";
ALTER TABLE "audit_events" RENAME TO "audit_events_unpartitioned";
-- The attempts' id sequence outlives the old table: new attempts keep numbering after the old ones.
ALTER SEQUENCE "delivery_attempts_id_seq" OWNED BY NONE;

-- CreateTable
CREATE TABLE "deliveries" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "webhook_id" UUID NOT NULL,
    "status" "DeliveryStatus" NOT NULL DEFAULT 'pending',
    "event_ids" UUID[],
    "event_count" INTEGER NOT NULL,
    "body_encrypted" TEXT,
    "content_type" TEXT,
    "error" TEXT,
    "attempt_count" INTEGER NOT NULL DEFAULT 0,
    "cycle_attempts" INTEGER NOT NULL DEFAULT 0,
    "next_retry_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "leased_until" TIMESTAMPTZ(3),
    "throttled_streak" INTEGER NOT NULL DEFAULT 0
) PARTITION BY RANGE ("id");

-- CreateTable
CREATE TABLE "delivery_attempts" (
    "id" BIGINT NOT NULL DEFAULT nextval('delivery_attempts_id_seq'),
    "delivery_id" UUID NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "status_code" INTEGER NOT NULL,
    "error" TEXT NOT NULL DEFAULT '',
    "duration_ms" INTEGER NOT NULL,
    "response_snippet" TEXT NOT NULL DEFAULT ''
) PARTITION BY RANGE ("delivery_id");
ALTER SEQUENCE "delivery_attempts_id_seq" OWNED BY "delivery_attempts"."id";

-- CreateTable
CREATE TABLE "audit_events" (
    "org_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "action" TEXT NOT NULL,
    "actor_type" TEXT NOT NULL,
    "actor_id" TEXT NOT NULL DEFAULT '',
    "actor_display_name" TEXT NOT NULL DEFAULT '',
    "resource_type" TEXT NOT NULL DEFAULT '',
    "resource_id" TEXT NOT NULL DEFAULT '',
    "resource_display_name" TEXT NOT NULL DEFAULT '',
    "resources" JSONB NOT NULL DEFAULT '{}',
    "context" JSONB NOT NULL DEFAULT '{}',
    "changes" JSONB NOT NULL DEFAULT '[]',
    "payload" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
) PARTITION BY RANGE ("received_at");

-- DEFAULT partitions: an insert never fails for want of a partition (packages/db/src/partitions.ts).
CREATE TABLE "deliveries_default" PARTITION OF "deliveries" DEFAULT WITH (fillfactor = 90);
CREATE TABLE "delivery_attempts_default" PARTITION OF "delivery_attempts" DEFAULT;
CREATE TABLE "audit_events_default" PARTITION OF "audit_events" DEFAULT;

-- Day partitions (UTC), named <table>_pYYYYMMDD as the worker names them.
DO $$
DECLARE
  today timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  first_event timestamptz;
  d timestamptz;
  suffix text;
BEGIN
  FOR i IN 0..37 LOOP
    d := today + make_interval(days => i);
    suffix := to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD');
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 90)',
      'deliveries_p' || suffix, pg_temp.v7_floor(d), pg_temp.v7_floor(d + interval '1 day'));
    EXECUTE format('CREATE TABLE %I PARTITION OF delivery_attempts FOR VALUES FROM (%L) TO (%L)',
      'delivery_attempts_p' || suffix, pg_temp.v7_floor(d), pg_temp.v7_floor(d + interval '1 day'));
  END LOOP;
  -- Audit events get a partition for every day they were received on, as far back as 40 days (older ones, if
  -- any were still kept for fan-out, go to the DEFAULT partition).
  SELECT date_trunc('day', min(received_at) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' INTO first_event FROM audit_events_unpartitioned;
  d := greatest(coalesce(first_event, today), today - interval '40 days');
  WHILE d < today + interval '38 days' LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF audit_events FOR VALUES FROM (%L) TO (%L)',
      'audit_events_p' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD'), d, d + interval '1 day');
    d := d + interval '1 day';
  END LOOP;
END $$;

-- Copy, then build keys and indexes (faster than maintaining them row by row).
INSERT INTO "deliveries" ("id", "org_id", "webhook_id", "status", "event_ids", "event_count", "body_encrypted", "content_type",
  "error", "attempt_count", "cycle_attempts", "next_retry_at", "created_at", "updated_at", "leased_until", "throttled_streak")
SELECT "id", "org_id", "webhook_id", "status", "event_ids", "event_count", "body_encrypted", "content_type",
  "error", "attempt_count", "cycle_attempts", "next_retry_at", "created_at", "updated_at", "leased_until", "throttled_streak"
FROM "deliveries_unpartitioned";

-- Attempts whose delivery is gone were cascaded away by the old foreign key: none to leave behind.
INSERT INTO "delivery_attempts" ("id", "delivery_id", "at", "status_code", "error", "duration_ms", "response_snippet")
SELECT "id", "delivery_id", "at", "status_code", "error", "duration_ms", "response_snippet" FROM "delivery_attempts_unpartitioned";

INSERT INTO "audit_events" ("org_id", "id", "action", "actor_type", "actor_id", "actor_display_name", "resource_type",
  "resource_id", "resource_display_name", "resources", "context", "changes", "payload", "created_at", "received_at")
SELECT "org_id", "id", "action", "actor_type", "actor_id", "actor_display_name", "resource_type",
  "resource_id", "resource_display_name", "resources", "context", "changes", "payload", "created_at", "received_at"
FROM "audit_events_unpartitioned";

DROP TABLE "deliveries_unpartitioned";
DROP TABLE "delivery_attempts_unpartitioned";
DROP TABLE "audit_events_unpartitioned";

-- AddPrimaryKey (each includes the partition key, as Postgres requires)
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_pkey" PRIMARY KEY ("id");
ALTER TABLE "delivery_attempts" ADD CONSTRAINT "delivery_attempts_pkey" PRIMARY KEY ("delivery_id", "id");
ALTER TABLE "audit_events" ADD CONSTRAINT "audit_events_pkey" PRIMARY KEY ("org_id", "id", "received_at");

-- CreateIndex
CREATE INDEX "deliveries_webhook_id_created_at_id_idx" ON "deliveries"("webhook_id", "created_at" DESC, "id" DESC);
CREATE INDEX "deliveries_webhook_id_status_created_at_idx" ON "deliveries"("webhook_id", "status", "created_at" DESC);
CREATE INDEX "deliveries_status_next_retry_at_idx" ON "deliveries"("status", "next_retry_at");
CREATE INDEX "audit_events_org_id_received_at_id_idx" ON "audit_events"("org_id", "received_at", "id");

-- Only the DEFAULT partitions are swept row by row (by age): only they carry an index for it.
CREATE INDEX "deliveries_default_created_at_idx" ON "deliveries_default"("created_at");
CREATE INDEX "delivery_attempts_default_at_idx" ON "delivery_attempts_default"("at");
CREATE INDEX "audit_events_default_received_at_idx" ON "audit_events_default"("received_at");

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Idempotent ingestion across partitions. Two statements, each with its own snapshot (a VOLATILE PL/pgSQL
-- function takes one per statement under READ COMMITTED):
-- 1. claim each (org_id, id) in pending_fanout, whose key is global: a concurrent ingestion of the same id waits
--    here for the first to commit and then skips it; an event still pending or parked is skipped;
-- 2. with a snapshot taken after 1, any claimed id already stored (fanned out, so no longer pending) is given
--    back, and the others are stored. An event committed by anyone before step 1 ended is seen by step 2.
-- Returns the (org_id, id) pairs stored, in the batch's order, the first occurrence of an id within the batch winning.
CREATE FUNCTION "insert_audit_events"(batch jsonb) RETURNS TABLE (org_id uuid, id uuid)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  claimed_orgs uuid[];
  claimed_ids uuid[];
BEGIN
  WITH claimed AS (
    INSERT INTO pending_fanout AS p (org_id, event_id, received_at)
    SELECT x.org_id, x.id, x.received_at FROM jsonb_to_recordset(batch) AS x(org_id uuid, id uuid, received_at timestamptz)
    ON CONFLICT DO NOTHING
    RETURNING p.org_id, p.event_id
  )
  SELECT array_agg(c.org_id), array_agg(c.event_id) INTO claimed_orgs, claimed_ids FROM claimed c;
  IF claimed_ids IS NULL THEN
    RETURN;
  END IF;

  RETURN QUERY
  WITH c AS (
    SELECT k.org_id, k.id FROM unnest(claimed_orgs, claimed_ids) AS k(org_id, id)
  ), seen AS (
    SELECT c.org_id, c.id FROM c
    WHERE EXISTS (SELECT 1 FROM audit_events e WHERE e.org_id = c.org_id AND e.id = c.id)
  ), given_back AS (
    DELETE FROM pending_fanout p USING seen s WHERE p.org_id = s.org_id AND p.event_id = s.id
  ), x AS (
    SELECT DISTINCT ON (r.org_id, r.id) r.*
    FROM ROWS FROM (jsonb_to_recordset(batch) AS (org_id uuid, id uuid, action text, actor_type text, actor_id text,
      actor_display_name text, resource_type text, resource_id text, resource_display_name text, resources jsonb,
      context jsonb, changes jsonb, payload jsonb, created_at timestamptz, received_at timestamptz)) WITH ORDINALITY
      AS r(org_id, id, action, actor_type, actor_id, actor_display_name, resource_type, resource_id, resource_display_name,
        resources, context, changes, payload, created_at, received_at, n)
    ORDER BY r.org_id, r.id, r.n
  ), stored AS (
    INSERT INTO audit_events AS e (org_id, id, action, actor_type, actor_id, actor_display_name, resource_type, resource_id,
      resource_display_name, resources, context, changes, payload, created_at, received_at)
    SELECT x.org_id, x.id, x.action, x.actor_type, x.actor_id, x.actor_display_name, x.resource_type, x.resource_id,
      x.resource_display_name, x.resources, x.context, x.changes, x.payload, x.created_at, x.received_at
    FROM x JOIN c ON c.org_id = x.org_id AND c.id = x.id
    WHERE NOT EXISTS (SELECT 1 FROM seen s WHERE s.org_id = x.org_id AND s.id = x.id)
    RETURNING e.org_id, e.id
  )
  SELECT s.org_id, s.id FROM stored s JOIN x ON x.org_id = s.org_id AND x.id = s.id ORDER BY x.n;
END
$fn$;
