/**
 * Reading webhook rows as the engine sees them (StoredWebhook) and their versions. Writes are in this folder's other
 * modules (config.ts, status.ts, failure-streak.ts, certificate.ts), and nowhere else.
 */
import { parseStoredWebhookAuth } from '@gatehook/core/webhook-auth';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import type { Pool } from '../client';

const COLUMNS = `id, org_id, name, status, events, condition, format, max_events, template, url_encrypted, var_names, vars_encrypted,
  headers_encrypted, secret_encrypted, previous_secret_encrypted, previous_secret_valid_until, active_since,
  client_certificate_encrypted, rate_limit_per_second, auth, auth_secret_encrypted`;

type Row = {
  id: string;
  org_id: string;
  name: string;
  status: StoredWebhook['status'];
  events: string[];
  condition: string;
  format: StoredWebhook['format'];
  max_events: number;
  template: string;
  url_encrypted: string;
  var_names: string[];
  vars_encrypted: string | null;
  headers_encrypted: string | null;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_valid_until: Date | null;
  active_since: Date;
  client_certificate_encrypted: string | null;
  rate_limit_per_second: number | null;
  auth: unknown;
  auth_secret_encrypted: string | null;
};

function toStoredWebhook(r: Row): StoredWebhook {
  return {
    id: r.id,
    orgId: r.org_id,
    name: r.name,
    status: r.status,
    events: r.events,
    condition: r.condition,
    format: r.format,
    maxEvents: r.max_events,
    template: r.template,
    urlEncrypted: r.url_encrypted,
    varNames: r.var_names,
    varsEncrypted: r.vars_encrypted,
    headersEncrypted: r.headers_encrypted,
    secretEncrypted: r.secret_encrypted,
    previousSecretEncrypted: r.previous_secret_encrypted,
    previousSecretValidUntil: r.previous_secret_valid_until,
    activeSince: r.active_since,
    clientCertificateEncrypted: r.client_certificate_encrypted,
    rateLimitPerSecond: r.rate_limit_per_second,
    auth: parseStoredWebhookAuth(r.auth),
    authSecretEncrypted: r.auth_secret_encrypted,
  };
}

/**
 * The version of a webhook's row as the engine reads it: a SHA-256 of exactly the columns of StoredWebhook, so any
 * change to one of them, by whatever statement, makes a new version, and nothing else does.
 */
const VERSION = `encode(sha256(convert_to(row(${COLUMNS})::text, 'UTF8')), 'base64')`;

/** A webhook's id and the version of its row (see {@link VERSION}). */
export interface WebhookVersion {
  id: string;
  version: string;
}

/**
 * Every webhook of an organisation, whatever its status (the engine's per-organisation configuration), as its id and
 * the version of its row only: a process that keeps each version it has opened reads in full only the rows whose
 * version it has not seen ({@link loadWebhookVersions}).
 */
export async function loadOrgWebhookVersions(pool: Pool, orgId: string): Promise<WebhookVersion[]> {
  const { rows } = await pool.query<WebhookVersion>({
    name: 'load_org_webhook_versions',
    text: `SELECT id, ${VERSION} AS version FROM webhooks WHERE org_id = $1`,
    values: [orgId],
  });
  return rows;
}

/**
 * These webhooks of an organisation in full, each with the version of the row read (it may be newer than one listed
 * before).
 */
export async function loadWebhookVersions(
  pool: Pool,
  orgId: string,
  ids: readonly string[],
): Promise<{ webhook: StoredWebhook; version: string }[]> {
  const { rows } = await pool.query<Row & { version: string }>({
    name: 'load_webhook_versions',
    text: `SELECT ${COLUMNS}, ${VERSION} AS version FROM webhooks WHERE org_id = $1 AND id = ANY($2::uuid[])`,
    values: [orgId, ids],
  });
  return rows.map((row) => ({ webhook: toStoredWebhook(row), version: row.version }));
}

/** One webhook by id, or null. */
export async function loadWebhook(pool: Pool, id: string): Promise<StoredWebhook | null> {
  const { rows } = await pool.query<Row>({
    name: 'load_webhook',
    text: `SELECT ${COLUMNS} FROM webhooks WHERE id = $1`,
    values: [id],
  });
  return rows[0] ? toStoredWebhook(rows[0]) : null;
}
