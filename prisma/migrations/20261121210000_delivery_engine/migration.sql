-- AlterTable
ALTER TABLE "deliveries" ADD COLUMN     "leased_until" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "batch_items" (
    "webhook_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "batch_items_pkey" PRIMARY KEY ("webhook_id","event_id")
);

-- CreateIndex
CREATE INDEX "batch_items_webhook_id_created_at_idx" ON "batch_items"("webhook_id", "created_at");

-- CreateIndex
CREATE INDEX "batch_items_created_at_idx" ON "batch_items"("created_at");

-- AddForeignKey
ALTER TABLE "batch_items" ADD CONSTRAINT "batch_items_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
