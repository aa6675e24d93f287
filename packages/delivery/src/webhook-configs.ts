import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { ConfigCache } from '@gatehook/cache/config-cache';
import type { InvalidationBus } from '@gatehook/cache/invalidation';
import { compileEventCondition, type CompiledCondition } from '@gatehook/conditions/event-condition';
import type { SecretBox } from '@gatehook/core/encryption';
import type { Logger } from '@gatehook/core/logger';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import type { ClientCertificate } from '@gatehook/egress/client-certificate';
import type { DestinationAuth } from '@gatehook/egress/oauth/token-request';
import { sqlPool, type Db, type Pool } from '@gatehook/db/client';
import { loadOrgWebhookVersions, loadWebhookVersions } from '@gatehook/db/webhook/read';
import { parseTemplate, type ExecLimits, type Template } from '@gatehook/templates/template';
import type { AuditEventData } from './render/envelope';
import { renderEnvelope } from './render/envelope';
import { renderWithTemplate } from './render/payload-template';
import { deliveryError } from './state/delivery-error';
import { WEBHOOK_CONFIG_TTL_MS } from './tunables';

/** The invalidation topic of webhook configuration; its keys are organisation ids. */
export const WEBHOOKS_TOPIC = 'webhooks';

/**
 * A stored row with the key of its version (LiveWebhooks): its id and a SHA-256 of its columns, which Postgres
 * computes for the worker's reloads (loadLive). A row without one (a test send's) is hashed by LiveWebhooks.
 */
export type VersionedWebhook = StoredWebhook & { version?: string };

export type RenderResult = { ok: true; json: string } | { ok: false; error: string };

/**
 * A webhook ready for the hot path: its stored configuration with secrets decrypted once, its condition and
 * template compiled once, per load of its organisation's configuration.
 */
export interface LiveWebhook extends StoredWebhook {
  /**
   * The stored row it was made from (secrets still encrypted) with its version key: what crosses to the render
   * threads, which then find their own compiled copy by that key without hashing the row again.
   */
  stored: VersionedWebhook;
  url: string;
  origin: string;
  headers: Record<string, string>;
  secret: string;
  previousSecret: string | null;
  /**
   * Presented on mTLS; one object per version of the stored row (LiveWebhooks), so the egress client keys its pool
   * by it cheaply.
   */
  clientCertificate: ClientCertificate | null;
  /** OAuth 2.0 destination authentication with its secret (CONTRACT 20); null: none. */
  destinationAuth: DestinationAuth | null;
  /** Set when a stored secret cannot be decrypted with the configured keys: its deliveries fail with this error. */
  unreadable: string | null;
  /** SPEC 6.2: no condition matches everything; an evaluation error or a stored condition that no longer compiles skips. */
  matches(event: AuditEventData): boolean;
  /**
   * Renders one event through the template, or the default envelope (memoised per event in `envelopes`); `limits`
   * narrows the template's execution limits.
   */
  render(event: AuditEventData, envelopes?: Map<string, string>, limits?: Partial<ExecLimits>): RenderResult;
}

const MATCH_ALL = () => true;

function compileCondition(webhook: StoredWebhook, logger?: Logger): (event: AuditEventData) => boolean {
  if (webhook.condition.trim() === '') return MATCH_ALL;
  const compiled = compileEventCondition(webhook.condition, webhook.events);
  if (!compiled.ok) {
    logger?.warn(
      { webhookId: webhook.id, issues: compiled.issues.map((i) => i.message) },
      'stored condition no longer compiles; the webhook matches nothing until it is fixed',
    );
    return () => false;
  }
  const condition: CompiledCondition = compiled.condition;
  return (event) => {
    const result = condition.evaluate(event);
    return result.ok && result.matches;
  };
}

/** Decrypts and compiles one stored webhook. Never throws: an unreadable secret is reported on the result. */
export function toLiveWebhook(stored: VersionedWebhook, box: SecretBox, logger?: Logger): LiveWebhook {
  let url = '';
  let origin = '';
  let headers: Record<string, string> = {};
  let vars: Record<string, string> = {};
  let secret = '';
  let previousSecret: string | null = null;
  let clientCertificate: ClientCertificate | null = null;
  let destinationAuth: DestinationAuth | null = null;
  let unreadable: string | null = null;
  try {
    const row = stored.id;
    url = box.decrypt(stored.urlEncrypted, { column: 'webhooks.url_encrypted', row });
    origin = new URL(url).origin;
    headers = stored.headersEncrypted
      ? box.decryptMap(stored.headersEncrypted, { column: 'webhooks.headers_encrypted', row })
      : {};
    vars = stored.varsEncrypted ? box.decryptMap(stored.varsEncrypted, { column: 'webhooks.vars_encrypted', row }) : {};
    secret = box.decrypt(stored.secretEncrypted, { column: 'webhooks.secret_encrypted', row });
    previousSecret = stored.previousSecretEncrypted
      ? box.decrypt(stored.previousSecretEncrypted, { column: 'webhooks.previous_secret_encrypted', row })
      : null;
    if (stored.clientCertificateEncrypted) {
      const { cert, key } = JSON.parse(
        box.decrypt(stored.clientCertificateEncrypted, { column: 'webhooks.client_certificate_encrypted', row }),
      ) as ClientCertificate;
      clientCertificate = { cert, key };
    }
    if (stored.auth && stored.authSecretEncrypted) {
      const secret = box.decrypt(stored.authSecretEncrypted, { column: 'webhooks.auth_secret_encrypted', row });
      // Tokens are cached under the webhook and this version of its auth: any change of auth fetches anew.
      const cacheKey = `${row}:${createHash('sha256').update(JSON.stringify(stored.auth)).update(stored.authSecretEncrypted).digest('base64url')}`;
      destinationAuth = { ...stored.auth, secret, cacheKey };
    }
  } catch {
    unreadable = deliveryError(
      'secret_unreadable',
      'a stored secret of this webhook cannot be decrypted with the configured keys',
    );
  }
  let template: Template | Error | null = null;
  if (stored.template.trim() !== '') {
    try {
      template = parseTemplate('template', stored.template);
    } catch (error) {
      template = new Error((error as Error).message);
    }
  }
  return {
    ...stored,
    stored,
    url,
    origin,
    headers,
    secret,
    previousSecret,
    clientCertificate,
    destinationAuth,
    unreadable,
    matches: compileCondition(stored, logger),
    render(event, envelopes, limits) {
      if (template === null) {
        let json = envelopes?.get(event.id);
        if (json === undefined) {
          json = renderEnvelope(event);
          envelopes?.set(event.id, json);
        }
        return { ok: true, json };
      }
      return renderWithTemplate(template, event, vars, limits);
    },
  };
}

/** The version key of a stored row: its id and a SHA-256 of the row as stored (any change makes a new key). */
function versionOf(stored: StoredWebhook): string {
  return `${stored.id}:${createHash('sha256').update(JSON.stringify(stored)).digest('base64url')}`;
}

/**
 * Webhooks already decrypted and compiled, keyed by the stored row's content, not by a timestamp: any change to it (a
 * template, a rotated secret, a status set by a statement that does not touch updated_at) makes a new entry, so each
 * secret is decrypted and each template and condition compiled once per process (or thread) and version. A reload
 * of an organisation after one of its webhooks changed (every change invalidates the whole organisation) then reads
 * every row's version and opens only the rows it has not seen ({@link loadLive}). The worker's versions are SHA-256s
 * that Postgres computes; a row without one (a test send's) is hashed here.
 */
export class LiveWebhooks {
  /** Versions kept (least recently used forgotten): as many as the configuration cache holds organisations. */
  private readonly compiled = new LRUCache<string, LiveWebhook>({ max: 10_000 });

  constructor(
    private readonly box: SecretBox,
    private readonly logger?: Logger,
  ) {}

  /**
   * The webhook of a stored row. A row that carries its `version` (one that LiveWebhooks of another thread of this
   * process made: a fan-out's rows crossing to a render thread) is found by that key without hashing it again.
   */
  of(stored: VersionedWebhook): LiveWebhook {
    const key = stored.version ?? versionOf(stored);
    let found = this.compiled.get(key);
    if (!found) {
      found = toLiveWebhook(stored.version === undefined ? { ...stored, version: key } : stored, this.box, this.logger);
      this.compiled.set(key, found);
    }
    return found;
  }

  /** The webhook of a version already opened here, without reading or hashing anything; undefined otherwise. */
  known(version: string): LiveWebhook | undefined {
    return this.compiled.get(version);
  }
}

/**
 * An organisation's webhooks, opened: the versions of its rows first (ids and SHA-256s computed by Postgres), then in
 * full only the rows whose version this process has not opened. A reload after a change to one webhook of an
 * organisation of 1,000 then reads, parses and opens one row, not 1,000. A row that changed between the two reads
 * is taken as the second read found it, under the version of that read.
 */
async function loadLive(pool: Pool, live: LiveWebhooks, orgId: string): Promise<LiveWebhook[]> {
  const versions = await loadOrgWebhookVersions(pool, orgId);
  const found = new Map<string, LiveWebhook>();
  const unknown: string[] = [];
  for (const { id, version } of versions) {
    const known = live.known(`${id}:${version}`);
    if (known) found.set(id, known);
    else unknown.push(id);
  }
  if (unknown.length > 0) {
    for (const { webhook, version } of await loadWebhookVersions(pool, orgId, unknown))
      found.set(webhook.id, live.of({ ...webhook, version: `${webhook.id}:${version}` }));
  }
  // In the order of the first read; a webhook deleted between the two reads is left out.
  return versions.flatMap(({ id }) => found.get(id) ?? []);
}

/**
 * Per-process cache of every organisation's webhooks (one bounded cache, packages/cache), invalidated through
 * Redis pub/sub by every change: an edited, paused or deleted webhook is honoured by every worker at once (within
 * 1 s even when a message is lost to a reconnect, since the bus then clears everything; the TTL is the last backstop).
 */
export class WebhookConfigs {
  private readonly cache: ConfigCache<LiveWebhook[]>;

  constructor(db: Db, box: SecretBox, options: { logger?: Logger; max?: number; ttlMs?: number } = {}) {
    const pool = sqlPool(db);
    const live = new LiveWebhooks(box, options.logger);
    this.cache = new ConfigCache<LiveWebhook[]>({
      max: options.max ?? 10_000,
      ttlMs: options.ttlMs ?? WEBHOOK_CONFIG_TTL_MS,
      load: (orgId) => loadLive(pool, live, orgId),
      // An organisation without webhooks is not kept: its first webhook must be seen by the next fan-out, not after
      // the invalidation message travels (on a cluster, through another node) to this worker. Such a load is one
      // indexed query that finds nothing.
      keep: (webhooks) => webhooks !== null && webhooks.length > 0,
    });
  }

  /** Every webhook of an organisation, whatever its status. */
  async ofOrg(orgId: string): Promise<LiveWebhook[]> {
    return (await this.cache.get(orgId)) ?? [];
  }

  /** One webhook; a miss reloads the organisation once (a webhook created after the cached load). */
  async get(orgId: string, webhookId: string): Promise<LiveWebhook | null> {
    const found = (await this.ofOrg(orgId)).find((w) => w.id === webhookId);
    if (found) return found;
    this.cache.invalidate([orgId]);
    return (await this.ofOrg(orgId)).find((w) => w.id === webhookId) ?? null;
  }

  /** Drops an organisation's entry in this process (after a change made here). */
  invalidate(orgId: string): void {
    this.cache.invalidate([orgId]);
  }

  follow(bus: InvalidationBus): Promise<() => void> {
    return this.cache.follow(bus, WEBHOOKS_TOPIC);
  }
}
