-- The whole schema of prisma/schema.prisma, for a fresh database: tables, types, indexes, functions and triggers,
-- and no data. Constraint and index names are Prisma's (docs/database.md, "Changing the schema").

-- CreateEnum
CREATE TYPE "ApiKeyRole" AS ENUM ('admin', 'member');

-- CreateEnum
CREATE TYPE "WebhookFormat" AS ENUM ('single', 'array', 'ndjson');

-- CreateEnum
CREATE TYPE "WebhookStatus" AS ENUM ('active', 'paused', 'disabled');

-- CreateEnum
CREATE TYPE "DisabledReason" AS ENUM ('gone', 'circuit_breaker', 'template_error', 'manual');

-- CreateEnum
CREATE TYPE "DeliveryStatus" AS ENUM ('pending', 'retrying', 'succeeded', 'failed');

-- CreateEnum
CREATE TYPE "RateLimitRuleStatus" AS ENUM ('active', 'disabled');

-- CreateEnum
CREATE TYPE "RateLimitAction" AS ENUM ('deny', 'log_only');

-- CreateEnum
CREATE TYPE "WebhookTaskKind" AS ENUM ('recover', 'replay');

-- CreateEnum
CREATE TYPE "WebhookTaskStatus" AS ENUM ('running', 'succeeded', 'failed');

-- CreateTable
CREATE TABLE "organizations" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "organizations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "role" "ApiKeyRole" NOT NULL,
    "permissions" TEXT[],
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
-- The `*_encrypted` columns hold AES-256-GCM tokens bound to their column and row; `auth` is the destination's
-- OAuth 2.0 configuration without its secret, which `auth_secret_encrypted` holds.
CREATE TABLE "webhooks" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "url_encrypted" TEXT NOT NULL,
    "url_mask" TEXT NOT NULL,
    "events" TEXT[],
    "condition" TEXT NOT NULL DEFAULT '',
    "destination" TEXT,
    "format" "WebhookFormat" NOT NULL DEFAULT 'single',
    "max_events" INTEGER NOT NULL DEFAULT 1,
    "template" TEXT NOT NULL DEFAULT '',
    "var_names" TEXT[],
    "vars_encrypted" TEXT,
    "header_names" TEXT[],
    "headers_encrypted" TEXT,
    "secret_encrypted" TEXT NOT NULL,
    "previous_secret_encrypted" TEXT,
    "previous_secret_valid_until" TIMESTAMPTZ(3),
    "status" "WebhookStatus" NOT NULL DEFAULT 'active',
    "disabled_reason" "DisabledReason",
    "failing_since" TIMESTAMPTZ(3),
    "active_since" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "client_certificate_encrypted" TEXT,
    "client_certificate_fingerprint" TEXT,
    "client_certificate_not_after" TIMESTAMPTZ(3),
    "client_certificate_warned_at" TIMESTAMPTZ(3),
    "rate_limit_per_second" INTEGER,
    "secrets_changed_at" TIMESTAMPTZ(3),
    "auth" JSONB,
    "auth_secret_encrypted" TEXT,

    CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "notifications" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "webhook_id" UUID,
    "message" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "read_at" TIMESTAMPTZ(3),

    CONSTRAINT "notifications_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "batch_items" (
    "webhook_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "batch_items_pkey" PRIMARY KEY ("webhook_id","event_id")
);

-- CreateTable
CREATE TABLE "rate_limit_rules" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "status" "RateLimitRuleStatus" NOT NULL DEFAULT 'active',
    "scope" JSONB NOT NULL,
    "key_by" TEXT[],
    "limit" INTEGER NOT NULL,
    "window_seconds" INTEGER NOT NULL,
    "burst" INTEGER NOT NULL DEFAULT 1,
    "action" "RateLimitAction" NOT NULL DEFAULT 'deny',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "rate_limit_rules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
-- Recover and replay tasks, with their cursor, lease and send clock (`paced_until`, TASK_SEND_RATE).
CREATE TABLE "webhook_tasks" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "webhook_id" UUID NOT NULL,
    "kind" "WebhookTaskKind" NOT NULL,
    "status" "WebhookTaskStatus" NOT NULL DEFAULT 'running',
    "since" TIMESTAMPTZ(3) NOT NULL,
    "until" TIMESTAMPTZ(3) NOT NULL,
    "total" INTEGER,
    "processed" INTEGER NOT NULL DEFAULT 0,
    "cursor_at" TIMESTAMPTZ(3),
    "cursor_id" UUID,
    "error" TEXT,
    "next_run_at" TIMESTAMPTZ(3) NOT NULL,
    "leased_until" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    "paced_until" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_tasks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
-- The fan-out outbox, a table of its own so that audit_events stays insert-only: one row per committed event not
-- fanned out yet, and claiming an event is deleting its row. A fan-out that keeps failing on an event is parked
-- instead of retried without end (docs/limits.md, "Fan-out that keeps failing"): `attempts` counts the runs that did
-- not complete for it, `last_error` keeps the last error (sanitised), `parked_at` is set once MAX_FANOUT_ATTEMPTS runs
-- did not complete. The reconciler skips parked events; an operator releases them (docs/operations.md).
CREATE TABLE "pending_fanout" (
    "org_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "parked_at" TIMESTAMPTZ(3),

    CONSTRAINT "pending_fanout_pkey" PRIMARY KEY ("org_id","event_id")
);

-- Partitioned history (docs/database.md, "Partitioned history"): deliveries, their attempts and audit events are the
-- only tables that grow with traffic. Each is RANGE-partitioned in UTC periods, plus a DEFAULT partition; the worker
-- creates partitions ahead and drops whole partitions past the retention (packages/db/src/partitions.ts).
--
-- deliveries        PARTITION BY RANGE (id): delivery ids are UUIDv7, whose first 48 bits are the creation time in
--                   milliseconds, so an id range is a time range and a lookup by id touches one partition.
-- delivery_attempts PARTITION BY RANGE (delivery_id), with the same bounds: a delivery and its attempts live and
--                   are dropped together. No foreign key to deliveries (detaching a referenced partition would check
--                   every attempt); an attempt is written only under its delivery's lease.
-- audit_events      PARTITION BY RANGE (received_at), the service's own clock: replay reads by it; the key
--                   (org_id, id, received_at) cannot make ids unique across partitions, so idempotent ingestion is
--                   decided by insert_audit_events() below, against pending_fanout and every partition.

-- CreateTable
-- `secrets_version` is the version of the webhook's variable and custom header values the body was rendered with (a
-- digest of their encrypted tokens, packages/delivery/src/render/secrets-version.ts): the request view
-- (GET .../deliveries/{id}/request) redacts a body only when the webhook still holds those values, and withholds it
-- otherwise. Null for a delivery without a body.
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
    "throttled_streak" INTEGER NOT NULL DEFAULT 0,
    "secrets_version" TEXT,

    CONSTRAINT "deliveries_pkey" PRIMARY KEY ("id")
) PARTITION BY RANGE ("id");

-- CreateTable
-- Attempts carry their webhook, so that one webhook's attempts of a time window are one index range: the hourly
-- statistics of GET /webhooks/{id}/stats (docs/operations.md, "Per-webhook statistics") read them by
-- (webhook_id, at) instead of probing every delivery's attempts. No foreign key: an attempt goes with its
-- delivery's partition, and a delivery goes with its webhook.
CREATE TABLE "delivery_attempts" (
    "id" BIGSERIAL NOT NULL,
    "delivery_id" UUID NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "status_code" INTEGER NOT NULL,
    "error" TEXT NOT NULL DEFAULT '',
    "duration_ms" INTEGER NOT NULL,
    "response_snippet" TEXT NOT NULL DEFAULT '',
    "webhook_id" UUID NOT NULL,

    CONSTRAINT "delivery_attempts_pkey" PRIMARY KEY ("delivery_id","id")
) PARTITION BY RANGE ("delivery_id");

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
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("org_id","id","received_at")
) PARTITION BY RANGE ("received_at");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_org_id_idx" ON "api_keys"("org_id");

-- CreateIndex
CREATE INDEX "webhooks_org_id_created_at_id_idx" ON "webhooks"("org_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "notifications_org_id_created_at_idx" ON "notifications"("org_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "batch_items_webhook_id_created_at_idx" ON "batch_items"("webhook_id", "created_at");

-- CreateIndex
CREATE INDEX "batch_items_created_at_idx" ON "batch_items"("created_at");

-- CreateIndex
CREATE INDEX "rate_limit_rules_org_id_created_at_id_idx" ON "rate_limit_rules"("org_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "rate_limit_rules_org_id_status_idx" ON "rate_limit_rules"("org_id", "status");

-- CreateIndex
-- One running recover or replay task per webhook, enforced by the database.
CREATE UNIQUE INDEX "webhook_tasks_running_webhook_id_key" ON "webhook_tasks"("webhook_id") WHERE (status = 'running');

-- CreateIndex
CREATE INDEX "webhook_tasks_webhook_id_created_at_id_idx" ON "webhook_tasks"("webhook_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_tasks_status_next_run_at_idx" ON "webhook_tasks"("status", "next_run_at");

-- CreateIndex
CREATE INDEX "pending_fanout_received_at_idx" ON "pending_fanout"("received_at");

-- CreateIndex
-- Only parked events enter the index.
CREATE INDEX "pending_fanout_parked_at_idx" ON "pending_fanout"("parked_at") WHERE (parked_at IS NOT NULL);

-- CreateIndex (on every partition)
CREATE INDEX "deliveries_webhook_id_created_at_id_idx" ON "deliveries"("webhook_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "deliveries_webhook_id_status_created_at_idx" ON "deliveries"("webhook_id", "status", "created_at" DESC);

-- CreateIndex
CREATE INDEX "deliveries_status_next_retry_at_idx" ON "deliveries"("status", "next_retry_at");

-- CreateIndex
CREATE INDEX "delivery_attempts_webhook_id_at_idx" ON "delivery_attempts"("webhook_id", "at");

-- CreateIndex
-- Replay reads audit events by (org_id, received_at, id); fan-out and batches by the key.
CREATE INDEX "audit_events_org_id_received_at_id_idx" ON "audit_events"("org_id", "received_at", "id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "batch_items" ADD CONSTRAINT "batch_items_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "rate_limit_rules" ADD CONSTRAINT "rate_limit_rules_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_tasks" ADD CONSTRAINT "webhook_tasks_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey (a partitioned table may refer to a plain one)
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- DEFAULT partitions: an insert never fails for want of a partition. `fillfactor = 90` on every deliveries partition
-- leaves room on each page for an update that touches no indexed column (the lease) to stay on its page (HOT).
CREATE TABLE "deliveries_default" PARTITION OF "deliveries" DEFAULT WITH (fillfactor = 90);
CREATE TABLE "delivery_attempts_default" PARTITION OF "delivery_attempts" DEFAULT;
CREATE TABLE "audit_events_default" PARTITION OF "audit_events" DEFAULT;

-- Only the DEFAULT partitions are swept row by row (by age): only they carry an index for it.
CREATE INDEX "deliveries_default_created_at_idx" ON "deliveries_default"("created_at");
CREATE INDEX "delivery_attempts_default_at_idx" ON "delivery_attempts_default"("at");
CREATE INDEX "audit_events_default_received_at_idx" ON "audit_events_default"("received_at");

-- Day partitions (UTC) for today and the 7 days ahead, named <table>_pYYYYMMDD with the bounds the worker gives
-- them: what its upkeep keeps ahead anyway, creating any that are missing at its start. No more are created here:
-- ingestion probes every audit-event partition for each id a client chose, so five weeks of empty future partitions
-- would make every fresh database's ingestion pay ~39 probes per id for nothing.

-- The lowest UUIDv7 of an instant: its Unix milliseconds in the first 48 bits, every other bit zero.
CREATE FUNCTION pg_temp.v7_floor(t timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-0000-0000-000000000000')::uuid
  FROM (SELECT lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') AS h) AS x
$$;

DO $$
DECLARE
  today timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  d timestamptz;
  suffix text;
BEGIN
  FOR i IN 0..7 LOOP
    d := today + make_interval(days => i);
    suffix := to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD');
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 90)',
      'deliveries_p' || suffix, pg_temp.v7_floor(d), pg_temp.v7_floor(d + interval '1 day'));
    EXECUTE format('CREATE TABLE %I PARTITION OF delivery_attempts FOR VALUES FROM (%L) TO (%L)',
      'delivery_attempts_p' || suffix, pg_temp.v7_floor(d), pg_temp.v7_floor(d + interval '1 day'));
    EXECUTE format('CREATE TABLE %I PARTITION OF audit_events FOR VALUES FROM (%L) TO (%L)',
      'audit_events_p' || suffix, d, d + interval '1 day');
  END LOOP;
END $$;

-- Idempotent ingestion across partitions, one round trip from insertAuditEvents (packages/db/src/outbox.ts), in
-- statements that each take their own snapshot (a VOLATILE PL/pgSQL function takes one per statement under READ
-- COMMITTED):
-- 1. claim each (org_id, id) in pending_fanout, whose key is global: a concurrent ingestion of the same id waits
--    here for the first to commit and then skips it; an event still pending or parked is skipped;
-- 2. with a snapshot taken after 1, a claimed id a client chose that is already stored in any partition (fanned
--    out, so no longer pending) is given back. An id the service generated itself (a fresh UUIDv7, flagged
--    `generated_id` in the batch by the API) was never stored before, so only chosen ids are looked for, in a
--    statement that runs only when there are some;
-- 3. the others are stored.
-- Returns the (org_id, id) pairs stored, in the batch's order, the first occurrence of an id within the batch winning.
CREATE FUNCTION "insert_audit_events"(batch jsonb) RETURNS TABLE (org_id uuid, id uuid)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  claimed_orgs uuid[];
  claimed_ids uuid[];
  chosen_orgs uuid[];
  chosen_ids uuid[];
  seen_orgs uuid[];
  seen_ids uuid[];
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

  -- The claimed ids a client chose: any of them may have been stored before, in any partition.
  SELECT array_agg(k.org_id), array_agg(k.id) INTO chosen_orgs, chosen_ids
  FROM unnest(claimed_orgs, claimed_ids) AS k(org_id, id)
  WHERE NOT EXISTS (
    SELECT 1 FROM jsonb_to_recordset(batch) AS g(org_id uuid, id uuid, generated_id boolean)
    WHERE g.generated_id IS TRUE AND g.org_id = k.org_id AND g.id = k.id
  );

  IF chosen_ids IS NOT NULL THEN
    -- One index probe per chosen id in each partition (LIMIT 1 stops at the first hit). Written as a semi-join,
    -- the planner may hash it against a scan of every partition.
    SELECT array_agg(c.org_id), array_agg(c.id) INTO seen_orgs, seen_ids
    FROM unnest(chosen_orgs, chosen_ids) AS c(org_id, id)
    CROSS JOIN LATERAL (SELECT 1 FROM audit_events e WHERE e.org_id = c.org_id AND e.id = c.id LIMIT 1) AS hit;
    IF seen_ids IS NOT NULL THEN
      -- Stored before: the claim is given back, nothing is stored again.
      DELETE FROM pending_fanout p USING unnest(seen_orgs, seen_ids) AS s(org_id, id)
      WHERE p.org_id = s.org_id AND p.event_id = s.id;
    END IF;
  END IF;

  RETURN QUERY
  WITH x AS (
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
    FROM x JOIN unnest(claimed_orgs, claimed_ids) AS c(org_id, id) ON c.org_id = x.org_id AND c.id = x.id
    WHERE NOT EXISTS (SELECT 1 FROM unnest(seen_orgs, seen_ids) AS s(org_id, id) WHERE s.org_id = x.org_id AND s.id = x.id)
    RETURNING e.org_id, e.id
  )
  SELECT s.org_id, s.id FROM stored s JOIN x ON x.org_id = s.org_id AND x.id = s.id ORDER BY x.n;
END
$fn$;

-- When a webhook's variable or custom header values last changed. A delivery rendered before then may carry values
-- that are no longer stored, which the request view (GET .../deliveries/{id}/request) therefore cannot redact: it
-- withholds such a body. Set by the database on every write that changes either encrypted map (the API rewrites
-- them only when a value really changes), so no writer can forget it.
CREATE FUNCTION "gatehook_note_webhook_secrets_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW."secrets_changed_at" := now();
  RETURN NEW;
END
$$;

CREATE TRIGGER "webhooks_secrets_changed_at" BEFORE UPDATE OF "vars_encrypted", "headers_encrypted" ON "webhooks"
  FOR EACH ROW
  WHEN (OLD."vars_encrypted" IS DISTINCT FROM NEW."vars_encrypted" OR OLD."headers_encrypted" IS DISTINCT FROM NEW."headers_encrypted")
  EXECUTE FUNCTION "gatehook_note_webhook_secrets_changed"();
