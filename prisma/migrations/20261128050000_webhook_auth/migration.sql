-- Destination authentication (OAuth 2.0): the configuration without its secret in clear, the secret (a client
-- secret or a PEM private key) encrypted and bound to its column and row.
-- AlterTable
ALTER TABLE "webhooks" ADD COLUMN     "auth" JSONB,
ADD COLUMN     "auth_secret_encrypted" TEXT;
