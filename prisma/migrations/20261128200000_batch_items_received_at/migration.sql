-- AlterTable
-- The instant each buffered event was received (its audit_events row's received_at, the partition key), written by
-- fan-out from the outbox row it claims: a batch flush reads its events by (org_id, id, received_at), one partition
-- each, instead of probing every partition of audit_events for every event (docs/database.md, "Partitioned history").
-- Null for an entry buffered before this column existed; the flush looks such an event up in every partition.
ALTER TABLE "batch_items" ADD COLUMN "received_at" TIMESTAMPTZ(3);
