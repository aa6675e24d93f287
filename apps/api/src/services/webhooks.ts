import { randomUUID } from 'node:crypto';
import type { SecretBox, SecretColumn, SecretPlace } from '@gatehook/core/encryption';
import { AppError, notFound, validationError, type FieldIssue } from '@gatehook/core/errors';
import { maskUrl } from '@gatehook/core/masking';
import { generateSigningSecret } from '@gatehook/core/signing-secret';
import type { CreateWebhookInput, PatchWebhookInput, WebhookView } from '@gatehook/core/webhook-schema';
import type { Change } from '@gatehook/db/audit-events';
import { compileEventCondition } from '@gatehook/conditions/event-condition';
import { checkPayloadTemplate } from '@gatehook/delivery/render/payload-template';
import { cancelQueuedWork, changeStatusManually, type ManualStatusOperation } from '@gatehook/delivery/state/webhook';
import type { Db, Prisma } from '@gatehook/db/client';
import type { Webhook } from '@gatehook/db/generated/client';
import {
  deleteWebhook as deleteWebhookRow,
  insertWebhook,
  lockWebhook,
  rotateWebhookSecret,
  updateWebhookConfig,
  type WebhookConfigChange,
} from '@gatehook/db/webhook/config';
import { checkDestinationUrl, type CidrList, type HostLookup } from '@gatehook/egress/address-policy';
import { inspectClientCertificate, type ClientCertificate } from '@gatehook/egress/client-certificate';
import { auditFields, type Actor } from '../http/actor';
import { byCreatedAt, listPage } from '../http/pagination';
import { auditedChange, type CommitHooks } from './commit-hooks';
import {
  authChange,
  authChanged,
  authColumns,
  authData,
  authorizationHeaderIssues,
  checkTokenUrl,
  storedAuthColumns,
} from './webhook-auth';
import { webhookAuthView } from '@gatehook/core/webhook-auth';

export interface WebhookDeps {
  db: Db;
  box: SecretBox;
  egressAllow: CidrList;
  /** Seconds the previous secret stays valid after a rotation. */
  rotationOverlapSeconds: number;
  /** Name resolution for the address policy; tests inject one, production uses the system resolver. */
  lookup?: HostLookup;
  /** After-commit announcements (cache invalidation, fan-out of the audit events); absent in bare tests. */
  hooks?: CommitHooks;
}

/** Maps a stored webhook to its API form: masks and names only, never a secret value. */
export function toWebhookView(row: Webhook): WebhookView {
  return {
    id: row.id,
    org_id: row.orgId,
    name: row.name,
    url: row.urlMask,
    events: row.events,
    condition: row.condition,
    destination: row.destination as WebhookView['destination'],
    format: row.format,
    max_events: row.maxEvents,
    template: row.template,
    vars: Object.fromEntries(row.varNames.map((n) => [n, ''] as const)),
    headers: Object.fromEntries(row.headerNames.map((n) => [n, ''] as const)),
    status: row.status,
    disabled_reason: row.disabledReason,
    failing_since: row.failingSince?.toISOString() ?? null,
    client_certificate:
      row.clientCertificateFingerprint && row.clientCertificateNotAfter
        ? {
            fingerprint_sha256: row.clientCertificateFingerprint,
            not_after: row.clientCertificateNotAfter.toISOString(),
          }
        : null,
    rate_limit_per_second: row.rateLimitPerSecond,
    auth: webhookAuthView(storedAuthColumns(row).auth),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

function policy(deps: WebhookDeps): { allow: CidrList; lookup?: HostLookup } {
  return { allow: deps.egressAllow, ...(deps.lookup ? { lookup: deps.lookup } : {}) };
}

async function checkUrl(deps: WebhookDeps, url: string): Promise<void> {
  const verdict = await checkDestinationUrl(url, {
    allow: deps.egressAllow,
    ...(deps.lookup ? { lookup: deps.lookup } : {}),
  });
  if (!verdict.ok) throw validationError([{ path: 'url', message: verdict.message }]);
}

/**
 * Checks the condition against the subscribed events and test-renders the template (SPEC 6.2.8, 6.3.4, 7.1).
 * Blank means none. Throws one 422 naming `condition` and/or `template`.
 */
function checkExpressions(webhook: {
  condition: string;
  template: string;
  events: readonly string[];
  vars: Record<string, string>;
}): void {
  const issues: FieldIssue[] = [];
  if (webhook.condition.trim() !== '') {
    const compiled = compileEventCondition(webhook.condition, webhook.events);
    if (!compiled.ok) issues.push(...compiled.issues.map((issue) => ({ path: 'condition', message: issue.message })));
  }
  if (webhook.template.trim() !== '') {
    const checked = checkPayloadTemplate(webhook.template, webhook.vars, webhook.events);
    if (!checked.ok) issues.push({ path: 'template', message: checked.message });
  }
  if (issues.length > 0) throw validationError(issues);
}

/**
 * The columns of a client certificate (CONTRACT 18), or of none: checked (parses, matches its key, not expired),
 * certificate and key encrypted as one token, fingerprint and expiry in clear; a new certificate is warned about
 * afresh. Throws one 422 on `client_certificate`.
 */
function clientCertificateColumns(box: SecretBox, id: string, given: ClientCertificate | null) {
  if (given === null) {
    return {
      clientCertificateEncrypted: null,
      clientCertificateFingerprint: null,
      clientCertificateNotAfter: null,
      clientCertificateWarnedAt: null,
    };
  }
  const checked = inspectClientCertificate(given);
  if (!checked.ok)
    throw validationError([
      { path: checked.field ? `client_certificate.${checked.field}` : 'client_certificate', message: checked.message },
    ]);
  return {
    clientCertificateEncrypted: box.encrypt(
      JSON.stringify({ cert: given.cert, key: given.key }),
      webhookPlace('webhooks.client_certificate_encrypted', id),
    ),
    clientCertificateFingerprint: checked.summary.fingerprintSha256,
    clientCertificateNotAfter: checked.summary.notAfter,
    clientCertificateWarnedAt: null,
  };
}

/** Where a webhook's secret column is stored, for the binding of its token (encryption.ts). */
function webhookPlace(column: SecretColumn & `webhooks.${string}`, id: string): SecretPlace {
  return { column, row: id };
}

/** Whether a new URL leaves the origin (scheme, host, port; WHATWG `URL.origin`) of the stored one. */
export function changesOrigin(storedUrl: string, newUrl: string): boolean {
  return new URL(storedUrl).origin !== new URL(newUrl).origin;
}

/**
 * Applies PATCH semantics to a secret map: a blank value keeps the stored value, a name left out is removed.
 * A blank value for a name with nothing stored is an issue, since there is nothing to keep. When the URL moves to
 * another origin nothing is kept (CONTRACT 15: secrets follow no URL): every blank value is an issue.
 */
function mergeSecretMap(
  field: 'vars' | 'headers',
  stored: Record<string, string>,
  patch: Record<string, string>,
  originChanged: boolean,
): { merged: Record<string, string>; issues: FieldIssue[] } {
  const issues: FieldIssue[] = [];
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(patch)) {
    if (value !== '') merged[name] = value;
    else if (originChanged)
      issues.push({ path: `${field}.${name}`, message: "must be supplied again when the URL's origin changes" });
    else if (Object.hasOwn(stored, name)) merged[name] = stored[name]!;
    else
      issues.push({
        path: `${field}.${name}`,
        message: 'a blank value keeps the stored value, but none is stored for this name',
      });
  }
  return { merged, issues };
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

function auditBase(actor: Actor, webhook: { id: string; name: string }) {
  return auditFields(actor, { type: 'webhook', payloadKey: 'webhook', id: webhook.id, name: webhook.name });
}

// Locks the row for the rest of the transaction so that concurrent edits produce exact diffs.
async function lockedWebhook(tx: Prisma.TransactionClient, orgId: string, id: string): Promise<Webhook> {
  const row = await lockWebhook(tx, orgId, id);
  if (!row) throw notFound('Webhook');
  return row;
}

/** POST /webhooks: validates, encrypts every secret, records webhook.created; the secret is returned once. */
export async function createWebhook(
  deps: WebhookDeps,
  actor: Actor,
  input: CreateWebhookInput,
): Promise<{ webhook: WebhookView; secret: string }> {
  checkExpressions(input);
  await checkUrl(deps, input.url);
  const secret = generateSigningSecret();
  const id = randomUUID();
  const certificate = clientCertificateColumns(deps.box, id, input.client_certificate);
  const auth = authColumns(deps.box, id, input.auth, null);
  const authIssues = [
    ...auth.issues,
    ...authorizationHeaderIssues(input.auth, Object.keys(input.headers)),
    ...(await checkTokenUrl(input.auth, policy(deps))),
  ];
  if (authIssues.length > 0) throw validationError(authIssues);
  const now = new Date();
  const row = await auditedChange(deps, actor.principal.orgId, { webhooks: true }, async (tx, record) => {
    const created = await insertWebhook(tx, {
      id,
      orgId: actor.principal.orgId,
      name: input.name,
      urlEncrypted: deps.box.encrypt(input.url, webhookPlace('webhooks.url_encrypted', id)),
      urlMask: maskUrl(input.url),
      events: input.events,
      condition: input.condition,
      destination: input.destination,
      format: input.format,
      maxEvents: input.max_events,
      template: input.template,
      varNames: Object.keys(input.vars),
      varsEncrypted: deps.box.encryptMap(input.vars, webhookPlace('webhooks.vars_encrypted', id)),
      headerNames: Object.keys(input.headers),
      headersEncrypted: deps.box.encryptMap(input.headers, webhookPlace('webhooks.headers_encrypted', id)),
      secretEncrypted: deps.box.encrypt(secret, webhookPlace('webhooks.secret_encrypted', id)),
      ...certificate,
      ...authData(auth.columns),
      rateLimitPerSecond: input.rate_limit_per_second,
      activeSince: now,
      createdAt: now,
    });
    // Stamped with the instant the webhook became active: it receives only events received after that instant.
    await record({ ...auditBase(actor, created), action: 'webhook.created', changes: [], createdAt: now });
    return created;
  });
  return { webhook: toWebhookView(row), secret };
}

export interface ListQuery {
  limit: number;
  cursor?: string | undefined;
  status?: 'active' | 'paused' | 'disabled' | undefined;
}

/** GET /webhooks: newest first, cursor-paginated. */
export async function listWebhooks(
  deps: WebhookDeps,
  orgId: string,
  query: ListQuery,
): Promise<{ items: WebhookView[]; next_cursor: string | null }> {
  return listPage(
    query,
    byCreatedAt('desc'),
    ({ where, ...page }) =>
      deps.db.webhook.findMany({
        where: { orgId, ...(query.status ? { status: query.status } : {}), ...where },
        ...page,
      }),
    (rows) => rows.map(toWebhookView),
  );
}

/** GET /webhooks/{id}: another organisation's webhook is the same 404 as a missing one. */
export async function getWebhook(deps: WebhookDeps, orgId: string, id: string): Promise<WebhookView> {
  const row = await deps.db.webhook.findFirst({ where: { id, orgId } });
  if (!row) throw notFound('Webhook');
  return toWebhookView(row);
}

/**
 * PATCH /webhooks/{id}: only fields present change; diffs carry masks and names, never secret values. A URL on
 * another origin needs every var and header value again (a map left out of the body keeps every value, so it is
 * refused too) and the client certificate again or null, and fails the deliveries rendered for the old receiver in
 * the same transaction (CONTRACT 15).
 */
export async function updateWebhook(
  deps: WebhookDeps,
  actor: Actor,
  id: string,
  patch: PatchWebhookInput,
): Promise<WebhookView> {
  const newUrl = patch.url !== undefined && patch.url !== '' ? patch.url : undefined;
  if (newUrl !== undefined) await checkUrl(deps, newUrl);
  const tokenUrlIssues = await checkTokenUrl(patch.auth, policy(deps));
  if (tokenUrlIssues.length > 0) throw validationError(tokenUrlIssues);

  const row = await auditedChange(deps, actor.principal.orgId, { webhooks: true }, async (tx, record) => {
    const current = await lockedWebhook(tx, actor.principal.orgId, id);
    const changes: Change[] = [];
    const data: WebhookConfigChange = {};

    const plain = [
      ['name', 'name', patch.name],
      ['events', 'events', patch.events],
      ['condition', 'condition', patch.condition],
      ['destination', 'destination', patch.destination],
      ['format', 'format', patch.format],
      ['max_events', 'maxEvents', patch.max_events],
      ['template', 'template', patch.template],
      ['rate_limit_per_second', 'rateLimitPerSecond', patch.rate_limit_per_second],
    ] as const;
    for (const [field, column, value] of plain) {
      if (value === undefined) continue;
      const old = current[column];
      if (JSON.stringify(old) === JSON.stringify(value)) continue;
      changes.push({ field, old, new: value });
      (data as Record<string, unknown>)[column] = value;
    }

    if (patch.client_certificate !== undefined) {
      const certificate = clientCertificateColumns(deps.box, id, patch.client_certificate);
      if (certificate.clientCertificateFingerprint !== current.clientCertificateFingerprint) {
        // Fingerprints only: the PEMs never enter an audit diff.
        changes.push({
          field: 'client_certificate',
          old: current.clientCertificateFingerprint,
          new: certificate.clientCertificateFingerprint,
        });
        Object.assign(data, certificate);
      }
    }

    let originChanged = false;
    if (newUrl !== undefined) {
      const storedUrl = deps.box.decrypt(current.urlEncrypted, webhookPlace('webhooks.url_encrypted', id));
      if (storedUrl !== newUrl) {
        originChanged = changesOrigin(storedUrl, newUrl);
        const mask = maskUrl(newUrl);
        changes.push({ field: 'url', old: current.urlMask, new: mask });
        data.urlEncrypted = deps.box.encrypt(newUrl, webhookPlace('webhooks.url_encrypted', id));
        data.urlMask = mask;
      }
    }

    const maps = [
      [
        'vars',
        patch.vars,
        current.varsEncrypted,
        current.varNames,
        'varNames',
        'varsEncrypted',
        'webhooks.vars_encrypted',
      ],
      [
        'headers',
        patch.headers,
        current.headersEncrypted,
        current.headerNames,
        'headerNames',
        'headersEncrypted',
        'webhooks.headers_encrypted',
      ],
    ] as const;
    let finalVars: Record<string, string> | undefined;
    const mapIssues: FieldIssue[] = [];
    for (const [field, given, storedToken, storedNames, namesColumn, encryptedColumn, column] of maps) {
      // On a new origin, a map left out would keep every stored value: it is read as every name given blank.
      const incoming =
        given ??
        (originChanged && storedNames.length > 0 ? Object.fromEntries(storedNames.map((n) => [n, ''])) : undefined);
      if (incoming === undefined) continue;
      const stored = storedToken ? deps.box.decryptMap(storedToken, webhookPlace(column, id)) : {};
      const { merged, issues } = mergeSecretMap(field, stored, incoming, originChanged);
      mapIssues.push(...issues);
      if (field === 'vars') finalVars = merged;
      if (sameMap(stored, merged)) continue;
      // Names only: values of vars and headers never enter an audit diff.
      changes.push({ field, old: storedNames, new: Object.keys(merged) });
      (data as Record<string, unknown>)[namesColumn] = Object.keys(merged);
      (data as Record<string, unknown>)[encryptedColumn] = deps.box.encryptMap(merged, webhookPlace(column, id));
    }
    // The client certificate is a credential of the receiver too: on a new origin it is given again or removed.
    if (originChanged && current.clientCertificateEncrypted !== null && patch.client_certificate === undefined) {
      mapIssues.push({
        path: 'client_certificate',
        message: "must be supplied again (or set to null) when the URL's origin changes",
      });
    }
    // auth (CONTRACT 20): an object replaces it, keeping a blank secret when the type is unchanged; on a new origin
    // the secret must be given again, so an auth left out of the body is refused like a map left out.
    const storedAuth = storedAuthColumns(current);
    const givenAuth =
      patch.auth ?? (patch.auth === undefined && originChanged && storedAuth.auth ? 'resupply' : undefined);
    let finalAuth = storedAuth;
    if (givenAuth === 'resupply') {
      mapIssues.push({
        path:
          storedAuth.auth?.type === 'oauth2_client_credentials'
            ? `auth.${storedAuth.auth.credential}`
            : 'auth.private_key',
        message: "must be supplied again when the URL's origin changes",
      });
    } else if (givenAuth !== undefined || patch.auth === null) {
      const next = authColumns(deps.box, id, patch.auth ?? null, { stored: storedAuth, originChanged });
      mapIssues.push(...next.issues);
      if (next.issues.length === 0 && authChanged(storedAuth, next.columns)) {
        finalAuth = next.columns;
        changes.push(authChange(storedAuth, next.columns));
        Object.assign(data, authData(next.columns));
      }
    }
    const finalHeaderNames =
      ((data as Record<string, unknown>).headerNames as string[] | undefined) ?? current.headerNames;
    mapIssues.push(...authorizationHeaderIssues(finalAuth.auth, finalHeaderNames));
    if (mapIssues.length > 0) throw validationError(mapIssues);

    if (changes.length === 0) return current;
    // Narrowing events can invalidate the stored condition; removing a variable can break the template.
    if (changes.some((c) => ['events', 'condition', 'template', 'vars'].includes(c.field))) {
      checkExpressions({
        events: patch.events ?? current.events,
        condition: patch.condition ?? current.condition,
        template: patch.template ?? current.template,
        vars:
          finalVars ??
          (current.varsEncrypted
            ? deps.box.decryptMap(current.varsEncrypted, webhookPlace('webhooks.vars_encrypted', id))
            : {}),
      });
    }
    const updated = await updateWebhookConfig(tx, id, data);
    if (originChanged) await cancelQueuedWork(tx, id, 'url_origin_changed');
    await record({ ...auditBase(actor, updated), action: 'webhook.updated', changes });
    return updated;
  });
  return toWebhookView(row);
}

/** DELETE /webhooks/{id}: deliveries go with it; the worker drops jobs whose webhook no longer exists. */
export async function deleteWebhook(deps: WebhookDeps, actor: Actor, id: string): Promise<void> {
  await auditedChange(deps, actor.principal.orgId, { webhooks: true }, async (tx, record) => {
    const current = await lockedWebhook(tx, actor.principal.orgId, id);
    await deleteWebhookRow(tx, id);
    await record({ ...auditBase(actor, current), action: 'webhook.deleted', changes: [] });
  });
}

function reseal(box: SecretBox, token: string, from: SecretPlace, to: SecretPlace): string | null {
  let plain: string;
  try {
    plain = box.decrypt(token, from);
  } catch {
    return null;
  }
  return box.encrypt(plain, to);
}

/** POST /webhooks/{id}/rotate-secret: the current secret stays valid for the overlap, then only the new one. */
export async function rotateSecret(
  deps: WebhookDeps,
  actor: Actor,
  id: string,
): Promise<{ secret: string; previous_valid_until: string }> {
  const secret = generateSigningSecret();
  const validUntil = new Date(Date.now() + deps.rotationOverlapSeconds * 1000);
  await auditedChange(deps, actor.principal.orgId, { webhooks: true }, async (tx, record) => {
    const current = await lockedWebhook(tx, actor.principal.orgId, id);
    await rotateWebhookSecret(tx, id, {
      secretEncrypted: deps.box.encrypt(secret, webhookPlace('webhooks.secret_encrypted', id)),
      // Bound to its new column; a secret no configured key opens could not sign anyway, so it is not carried over.
      previousSecretEncrypted: reseal(
        deps.box,
        current.secretEncrypted,
        webhookPlace('webhooks.secret_encrypted', id),
        webhookPlace('webhooks.previous_secret_encrypted', id),
      ),
      previousValidUntil: validUntil,
    });
    await record({
      ...auditBase(actor, current),
      action: 'webhook.secret_rotated',
      changes: [],
      payload: { webhook_id: current.id, webhook_name: current.name, previous_valid_until: validUntil.toISOString() },
    });
  });
  return { secret, previous_valid_until: validUntil.toISOString() };
}

/**
 * POST /webhooks/{id}/enable|disable|pause|resume: the change itself is the engine's (changeStatusManually);
 * here it is locked, audited and announced.
 */
export async function changeWebhookStatus(
  deps: WebhookDeps,
  actor: Actor,
  id: string,
  operation: ManualStatusOperation,
): Promise<WebhookView> {
  const row = await auditedChange(deps, actor.principal.orgId, { webhooks: true }, async (tx, record) => {
    const current = await lockedWebhook(tx, actor.principal.orgId, id);
    const now = new Date();
    const updated = await changeStatusManually(tx, current, operation, now);
    if (updated === current) return current;
    const changes: Change[] = [{ field: 'status', old: current.status, new: updated.status }];
    if (current.disabledReason !== updated.disabledReason) {
      changes.push({ field: 'disabled_reason', old: current.disabledReason, new: updated.disabledReason });
    }
    await record({ ...auditBase(actor, updated), action: 'webhook.updated', changes, createdAt: now });
    return updated;
  });
  return toWebhookView(row);
}
