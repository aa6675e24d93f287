-- CreateEnum
CREATE TYPE "ApiKeyRole" AS ENUM ('admin', 'member');

-- CreateEnum
CREATE TYPE "WebhookFormat" AS ENUM ('single', 'array', 'ndjson');

-- CreateEnum
CREATE TYPE "WebhookStatus" AS ENUM ('active', 'paused', 'disabled');

-- CreateEnum
CREATE TYPE "DisabledReason" AS ENUM ('gone', 'circuit_breaker', 'template_error', 'manual');

-- CreateEnum
CREATE TYPE "DeliveryStatus" AS ENUM ('pending', 'retrying', 'succeeded', 'failed');

-- CreateTable
CREATE TABLE "organizations" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "organizations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "role" "ApiKeyRole" NOT NULL,
    "permissions" TEXT[],
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhooks" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "url_encrypted" TEXT NOT NULL,
    "url_mask" TEXT NOT NULL,
    "events" TEXT[],
    "condition" TEXT NOT NULL DEFAULT '',
    "destination" TEXT,
    "format" "WebhookFormat" NOT NULL DEFAULT 'single',
    "max_events" INTEGER NOT NULL DEFAULT 1,
    "template" TEXT NOT NULL DEFAULT '',
    "var_names" TEXT[],
    "vars_encrypted" TEXT,
    "header_names" TEXT[],
    "headers_encrypted" TEXT,
    "secret_encrypted" TEXT NOT NULL,
    "previous_secret_encrypted" TEXT,
    "previous_secret_valid_until" TIMESTAMPTZ(3),
    "status" "WebhookStatus" NOT NULL DEFAULT 'active',
    "disabled_reason" "DisabledReason",
    "failing_since" TIMESTAMPTZ(3),
    "active_since" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_events" (
    "org_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "action" TEXT NOT NULL,
    "actor_type" TEXT NOT NULL,
    "actor_id" TEXT NOT NULL DEFAULT '',
    "actor_display_name" TEXT NOT NULL DEFAULT '',
    "resource_type" TEXT NOT NULL DEFAULT '',
    "resource_id" TEXT NOT NULL DEFAULT '',
    "resource_display_name" TEXT NOT NULL DEFAULT '',
    "resources" JSONB NOT NULL DEFAULT '{}',
    "context" JSONB NOT NULL DEFAULT '{}',
    "changes" JSONB NOT NULL DEFAULT '[]',
    "payload" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "fanned_out_at" TIMESTAMPTZ(3),

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("org_id","id")
);

-- CreateTable
CREATE TABLE "deliveries" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "webhook_id" UUID NOT NULL,
    "status" "DeliveryStatus" NOT NULL DEFAULT 'pending',
    "event_ids" UUID[],
    "event_count" INTEGER NOT NULL,
    "body_encrypted" TEXT,
    "content_type" TEXT,
    "error" TEXT,
    "attempt_count" INTEGER NOT NULL DEFAULT 0,
    "cycle_attempts" INTEGER NOT NULL DEFAULT 0,
    "next_retry_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "delivery_attempts" (
    "id" BIGSERIAL NOT NULL,
    "delivery_id" UUID NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "status_code" INTEGER NOT NULL,
    "error" TEXT NOT NULL DEFAULT '',
    "duration_ms" INTEGER NOT NULL,
    "response_snippet" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "delivery_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "notifications" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "webhook_id" UUID,
    "message" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "read_at" TIMESTAMPTZ(3),

    CONSTRAINT "notifications_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_org_id_idx" ON "api_keys"("org_id");

-- CreateIndex
CREATE INDEX "webhooks_org_id_created_at_id_idx" ON "webhooks"("org_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "audit_events_org_id_created_at_idx" ON "audit_events"("org_id", "created_at");

-- CreateIndex
CREATE INDEX "audit_events_fanned_out_at_received_at_idx" ON "audit_events"("fanned_out_at", "received_at");

-- CreateIndex
CREATE INDEX "deliveries_webhook_id_created_at_id_idx" ON "deliveries"("webhook_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "deliveries_webhook_id_status_created_at_idx" ON "deliveries"("webhook_id", "status", "created_at" DESC);

-- CreateIndex
CREATE INDEX "deliveries_status_next_retry_at_idx" ON "deliveries"("status", "next_retry_at");

-- CreateIndex
CREATE INDEX "deliveries_created_at_idx" ON "deliveries"("created_at");

-- CreateIndex
CREATE INDEX "delivery_attempts_delivery_id_id_idx" ON "delivery_attempts"("delivery_id", "id");

-- CreateIndex
CREATE INDEX "notifications_org_id_created_at_idx" ON "notifications"("org_id", "created_at" DESC);

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "delivery_attempts" ADD CONSTRAINT "delivery_attempts_delivery_id_fkey" FOREIGN KEY ("delivery_id") REFERENCES "deliveries"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
