-- CreateEnum
CREATE TYPE "RateLimitRuleStatus" AS ENUM ('active', 'disabled');

-- CreateEnum
CREATE TYPE "RateLimitAction" AS ENUM ('deny', 'log_only');

-- CreateTable
CREATE TABLE "rate_limit_rules" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "status" "RateLimitRuleStatus" NOT NULL DEFAULT 'active',
    "scope" JSONB NOT NULL,
    "key_by" TEXT[],
    "limit" INTEGER NOT NULL,
    "window_seconds" INTEGER NOT NULL,
    "burst" INTEGER NOT NULL DEFAULT 1,
    "action" "RateLimitAction" NOT NULL DEFAULT 'deny',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "rate_limit_rules_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "rate_limit_rules_org_id_created_at_id_idx" ON "rate_limit_rules"("org_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "rate_limit_rules_org_id_status_idx" ON "rate_limit_rules"("org_id", "status");

-- AddForeignKey
ALTER TABLE "rate_limit_rules" ADD CONSTRAINT "rate_limit_rules_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
