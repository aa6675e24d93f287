-- Ingestion's probe for a client-chosen id (step 2 of insert_audit_events()) looked in every partition of
-- audit_events, so its cost grew with the history kept (docs/database.md, "Idempotent ingestion across partitions").
-- A UUIDv7 id carries the instant it was made (its first 48 bits, Unix milliseconds), and an event cannot be received
-- before its id was made: such an id is now looked for only in the partitions from that instant less a day on (the
-- day covers a client whose clock runs ahead of the service's). An id whose instant is more than a day ahead of the
-- service's clock (a client clock far off, or an id that only looks like a UUIDv7), and any other id, is looked for in
-- every partition, as before.

-- The earliest received_at a stored copy of a client-chosen id can have: for a UUIDv7 id (version 7, RFC 9562
-- variant) its instant less a day, unless that instant is more than a day ahead of now; '-infinity' otherwise.
-- STABLE (now()) and a single expression: the planner inlines it.
CREATE FUNCTION "gatehook_chosen_id_since"(id uuid) RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN substr(id::text, 15, 1) = '7' AND substr(id::text, 20, 1) IN ('8', '9', 'a', 'b')
      AND to_timestamp(('x' || substr(id::text, 1, 8) || substr(id::text, 10, 4))::bit(48)::bigint / 1000.0)
        <= now() + interval '1 day'
    THEN to_timestamp(('x' || substr(id::text, 1, 8) || substr(id::text, 10, 4))::bit(48)::bigint / 1000.0)
      - interval '1 day'
    ELSE '-infinity'::timestamptz
  END
$$;

-- insert_audit_events() as the initial migration made it, but for step 2's probe.
CREATE OR REPLACE FUNCTION "insert_audit_events"(batch jsonb) RETURNS TABLE (org_id uuid, id uuid)
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
    -- One index probe per chosen id in each partition it may be in (LIMIT 1 stops at the first hit). Written as a
    -- semi-join, the planner may hash it against a scan of every partition. A UUIDv7 id is looked for only from its
    -- own instant less a day on (gatehook_chosen_id_since): run-time pruning skips the older partitions for it.
    -- OFFSET 0 keeps the bound computed once per id, not once per partition.
    SELECT array_agg(c.org_id), array_agg(c.id) INTO seen_orgs, seen_ids
    FROM (SELECT k.org_id, k.id, gatehook_chosen_id_since(k.id) AS since
          FROM unnest(chosen_orgs, chosen_ids) AS k(org_id, id) OFFSET 0) AS c
    CROSS JOIN LATERAL (
      SELECT 1 FROM audit_events e WHERE e.org_id = c.org_id AND e.id = c.id AND e.received_at >= c.since LIMIT 1
    ) AS hit;
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
