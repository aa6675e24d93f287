import type { StoredWebhook } from '@gatehook/core/webhook-config';
import type { Pool } from './client';

const COLUMNS = `id, org_id, name, status, events, condition, format, max_events, template, url_encrypted, var_names, vars_encrypted,
  headers_encrypted, secret_encrypted, previous_secret_encrypted, previous_secret_valid_until, active_since`;

type Row = {
  id: string; org_id: string; name: string; status: StoredWebhook['status']; events: string[]; condition: string;
  format: StoredWebhook['format']; max_events: number; template: string; url_encrypted: string; var_names: string[];
  vars_encrypted: string | null;
  headers_encrypted: string | null; secret_encrypted: string; previous_secret_encrypted: string | null;
  previous_secret_valid_until: Date | null; active_since: Date;
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
  };
}

/** Every webhook of an organisation, whatever its status (the engine's per-organisation configuration). */
export async function loadOrgWebhooks(pool: Pool, orgId: string): Promise<StoredWebhook[]> {
  const { rows } = await pool.query<Row>({ name: 'load_org_webhooks', text: `SELECT ${COLUMNS} FROM webhooks WHERE org_id = $1`, values: [orgId] });
  return rows.map(toStoredWebhook);
}

/** One webhook by id, or null. */
export async function loadWebhook(pool: Pool, id: string): Promise<StoredWebhook | null> {
  const { rows } = await pool.query<Row>({ name: 'load_webhook', text: `SELECT ${COLUMNS} FROM webhooks WHERE id = $1`, values: [id] });
  return rows[0] ? toStoredWebhook(rows[0]) : null;
}
