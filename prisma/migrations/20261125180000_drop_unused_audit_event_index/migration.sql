-- No statement reads audit events by (org_id, created_at): replay reads them by (org_id, received_at, id), fan-out and
-- batches by (org_id, id). The index cost every ingested event one more B-tree insert (one of five) for nothing.
DROP INDEX IF EXISTS "audit_events_org_id_created_at_idx";
