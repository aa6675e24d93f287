-- AlterTable
ALTER TABLE "webhooks" ADD COLUMN     "client_certificate_encrypted" TEXT,
ADD COLUMN     "client_certificate_fingerprint" TEXT,
ADD COLUMN     "client_certificate_not_after" TIMESTAMPTZ(3),
ADD COLUMN     "client_certificate_warned_at" TIMESTAMPTZ(3),
ADD COLUMN     "rate_limit_per_second" INTEGER;
