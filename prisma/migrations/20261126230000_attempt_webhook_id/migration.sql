-- Attempts carry their webhook, so that one webhook's attempts of a time window are one index range: the hourly
-- statistics of GET /webhooks/{id}/stats (docs/operations.md, "Per-webhook statistics") read them by
-- (webhook_id, at) instead of probing every delivery's attempts. No foreign key: an attempt goes with its
-- delivery (ON DELETE CASCADE), which goes with its webhook.
ALTER TABLE "delivery_attempts" ADD COLUMN "webhook_id" UUID;
UPDATE "delivery_attempts" a SET "webhook_id" = d."webhook_id" FROM "deliveries" d WHERE d."id" = a."delivery_id";
ALTER TABLE "delivery_attempts" ALTER COLUMN "webhook_id" SET NOT NULL;
CREATE INDEX "delivery_attempts_webhook_id_at_idx" ON "delivery_attempts"("webhook_id", "at");
