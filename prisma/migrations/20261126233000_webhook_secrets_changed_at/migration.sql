-- When a webhook's variable or custom header values last changed. A delivery rendered before then may carry values
-- that are no longer stored, which the request view (GET .../deliveries/{id}/request) therefore cannot redact: it
-- withholds such a body. Set by the database on every write that changes either encrypted map (the API rewrites
-- them only when a value really changes), so no writer can forget it.
ALTER TABLE "webhooks" ADD COLUMN "secrets_changed_at" TIMESTAMPTZ(3);

CREATE FUNCTION "gatehook_note_webhook_secrets_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW."secrets_changed_at" := now();
  RETURN NEW;
END
$$;

CREATE TRIGGER "webhooks_secrets_changed_at" BEFORE UPDATE OF "vars_encrypted", "headers_encrypted" ON "webhooks"
  FOR EACH ROW
  WHEN (OLD."vars_encrypted" IS DISTINCT FROM NEW."vars_encrypted" OR OLD."headers_encrypted" IS DISTINCT FROM NEW."headers_encrypted")
  EXECUTE FUNCTION "gatehook_note_webhook_secrets_changed"();
