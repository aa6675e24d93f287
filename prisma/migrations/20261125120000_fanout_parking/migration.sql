-- A fan-out that keeps failing on an event is parked instead of retried without end (docs/limits.md, "Fan-out
-- that keeps failing"): each pending event counts the fan-out runs that did not complete for it, keeps the last
-- error (sanitised), and is parked once MAX_FANOUT_ATTEMPTS runs did not complete. The reconciler skips parked
-- events; an operator releases them (docs/operations.md). Only parked rows enter the index.

-- AlterTable
ALTER TABLE "pending_fanout" ADD COLUMN     "attempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "last_error" TEXT,
ADD COLUMN     "parked_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "pending_fanout_parked_at_idx" ON "pending_fanout"("parked_at") WHERE (parked_at IS NOT NULL);
