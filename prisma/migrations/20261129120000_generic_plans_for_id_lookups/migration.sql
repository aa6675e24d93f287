-- The id lookups of ingestion and fan-out keep one plan per session instead of being planned at every call
-- (docs/database.md, "Plans of the id lookups").
--
-- Both statements start from a list of ids and look each one up by primary key in audit_events (a LATERAL … LIMIT 1),
-- so the partition each lookup reads is known only at run time: every plan, custom or generic, holds all the
-- partitions and prunes them as it runs. Postgres's plan cache still chose a custom plan for every call whenever a
-- session's first calls carried a few ids (its generic plan is costed for ten ids, the custom ones for the one or
-- two they held), and planning one of them, all partitions included, cost ten times running it: 0.8 ms against
-- 0.08 ms per single-event request on a 2-core machine with nine partitions a table, and more with every day of
-- history kept. A session whose first calls carried hundreds of ids chose the generic plan and kept it, so the cost
-- of a stack depended on what it happened to see first.

-- Step 2's probe, and every other statement of ingestion's function, runs from the session's generic plan.
ALTER FUNCTION "insert_audit_events"(jsonb) SET plan_cache_mode = force_generic_plan;

-- readPendingEvents' statement (packages/db/src/outbox.ts), as a function so that the setting holds for it alone:
-- the events among `ids` of an organisation that are not fanned out yet, ordered by id. No lock is taken. The
-- columns are EVENT_SELECT's.
CREATE FUNCTION "gatehook_read_pending_events"(org uuid, ids uuid[])
RETURNS TABLE (id uuid, org_id uuid, action text, actor_type text, actor_id text, actor_display_name text,
  resource_type text, resource_id text, resource_display_name text, resources jsonb, context jsonb, changes jsonb,
  payload jsonb, created_ms double precision, received_ms double precision)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT e.id, e.org_id, e.action, e.actor_type, e.actor_id, e.actor_display_name, e.resource_type, e.resource_id,
    e.resource_display_name, e.resources, e.context, e.changes, e.payload,
    date_part('epoch', e.created_at) * 1000, date_part('epoch', e.received_at) * 1000
  FROM (SELECT DISTINCT unnest(ids) AS id) AS k
  CROSS JOIN LATERAL (SELECT p.received_at FROM pending_fanout p WHERE p.org_id = org AND p.event_id = k.id LIMIT 1) p
  -- The pending row's received_at is the event's: the lookup prunes to its one partition.
  CROSS JOIN LATERAL (
    SELECT * FROM audit_events e WHERE e.org_id = org AND e.id = k.id AND e.received_at = p.received_at LIMIT 1
  ) e
  ORDER BY e.id;
END
$fn$;
