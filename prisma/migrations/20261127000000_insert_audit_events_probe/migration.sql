-- insert_audit_events() (migration 20261126120000_partitioned_history) looks for an id already stored in any
-- partition. Its semi-join let the planner hash the claimed ids against a scan of every audit-event partition,
-- so each ingestion read the whole history; it now probes each partition's (org_id, id, received_at) key once per
-- claimed id. Same contract: returns the (org_id, id) pairs stored, in the batch's order.
CREATE OR REPLACE FUNCTION "insert_audit_events"(batch jsonb) RETURNS TABLE (org_id uuid, id uuid)
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
    -- One index probe per claimed id in each partition (LIMIT 1 stops at the first hit). Written as a semi-join,
    -- the planner may hash it against a scan of every partition: the whole history read on every ingestion.
    SELECT c.org_id, c.id FROM c
    CROSS JOIN LATERAL (SELECT 1 FROM audit_events e WHERE e.org_id = c.org_id AND e.id = c.id LIMIT 1) AS hit
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
