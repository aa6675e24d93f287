import { randomUUID } from 'node:crypto';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import { deliveryError } from '../state/delivery-error';
import type { LiveWebhook } from '../webhook-configs';
import { packBodies } from './bodies';
import type { AuditEventData } from './envelope';
import { REQUEST_RENDER_BUDGET_MS } from './payload-template';

/** The `webhook.test` event of a test send; never stored and never fanned out. */
export function testEvent(webhook: Pick<StoredWebhook, 'id' | 'orgId' | 'name'>, now = new Date()): AuditEventData {
  return {
    id: randomUUID(),
    org_id: webhook.orgId,
    action: 'webhook.test',
    actor_type: 'system',
    actor_id: 'gatehook',
    actor_display_name: 'Gatehook',
    resource_type: 'webhook',
    resource_id: webhook.id,
    resource_display_name: webhook.name,
    resources: {},
    context: {},
    changes: [],
    payload: { webhook_id: webhook.id, webhook_name: webhook.name },
    created_at: now.toISOString(),
  };
}

/** A test send's body, or why there is none. */
export type TestBody = { ok: true; body: string; contentType: string } | { ok: false; error: string };

/**
 * Renders and packs the body of a test send, with the webhook's template and format, within `budgetMs`
 * (CONTRACT 15: the request's one render budget). Pure; the API runs it in its render pool.
 */
export function renderTestBody(
  webhook: LiveWebhook,
  event: AuditEventData,
  budgetMs: number = REQUEST_RENDER_BUDGET_MS,
): TestBody {
  const rendered = webhook.render(event, undefined, { maxDurationMs: budgetMs });
  if (!rendered.ok) return { ok: false, error: deliveryError('template_error', rendered.error) };
  const { bodies } = packBodies(webhook.format, [{ eventId: event.id, json: rendered.json }], webhook.maxEvents);
  const body = bodies[0];
  return body
    ? { ok: true, body: body.body, contentType: body.contentType }
    : { ok: false, error: deliveryError('payload_too_large') };
}

/** Renders a test send's body away from the caller's event loop (the render pool), or in place. */
export type TestRenderer = (webhook: StoredWebhook, event: AuditEventData) => Promise<TestBody>;
