-- The fan-out outbox moves to a table of its own: audit_events becomes insert-only (fan-out no longer rewrites
-- every event row and its index entries), and claiming an event is deleting its small pending row.

-- CreateTable
CREATE TABLE "pending_fanout" (
    "org_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "pending_fanout_pkey" PRIMARY KEY ("org_id","event_id")
);

-- CreateIndex
CREATE INDEX "pending_fanout_received_at_idx" ON "pending_fanout"("received_at");

-- Events not fanned out yet keep waiting.
INSERT INTO "pending_fanout" ("org_id", "event_id", "received_at")
SELECT "org_id", "id", "received_at" FROM "audit_events" WHERE "fanned_out_at" IS NULL;

-- DropIndex
DROP INDEX "audit_events_fanned_out_at_received_at_idx";

-- AlterTable
ALTER TABLE "audit_events" DROP COLUMN "fanned_out_at";
