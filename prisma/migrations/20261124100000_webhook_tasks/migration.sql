-- CreateEnum
CREATE TYPE "WebhookTaskKind" AS ENUM ('recover', 'replay');

-- CreateEnum
CREATE TYPE "WebhookTaskStatus" AS ENUM ('running', 'succeeded', 'failed');

-- CreateTable
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

    CONSTRAINT "webhook_tasks_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "webhook_tasks_running_webhook_id_key" ON "webhook_tasks"("webhook_id") WHERE (status = 'running');

-- CreateIndex
CREATE INDEX "webhook_tasks_webhook_id_created_at_id_idx" ON "webhook_tasks"("webhook_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_tasks_status_next_run_at_idx" ON "webhook_tasks"("status", "next_run_at");

-- CreateIndex
CREATE INDEX "audit_events_org_id_received_at_id_idx" ON "audit_events"("org_id", "received_at", "id");

-- AddForeignKey
ALTER TABLE "webhook_tasks" ADD CONSTRAINT "webhook_tasks_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
