-- The version of the webhook's variable and custom header values a delivery's body was rendered with (a digest of
-- their encrypted tokens, packages/delivery/src/render/secrets-version.ts). The request view
-- (GET .../deliveries/{id}/request) redacts a body only when the webhook still holds those values, and withholds it
-- otherwise. Null for deliveries without a body and for those created before the column existed. Additive: code
-- before it neither reads nor writes it, so old and new processes run side by side during a roll.
ALTER TABLE "deliveries" ADD COLUMN "secrets_version" TEXT;
