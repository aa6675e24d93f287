import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { validationError, type FieldIssue } from '@gatehook/core/errors';
import { createWebhookSchema } from '@gatehook/core/webhook-schema';
import { packBodies, type RenderedEvent } from './bodies';
import { renderEnvelope, type AuditEventData } from './envelope';
import { parseAuditEvents } from './audit-event-input';
import { checkPayloadTemplate, renderWithTemplate, sampleEvent } from './payload-template';

/** Most events one preview renders. */
export const PREVIEW_MAX_EVENTS = 100;

/**
 * Body of POST /webhooks/preview (CONTRACT 12): the rendering fields of a webhook, with the same rules as on save,
 * and optionally the events to render (else the catalogue's sample event). `events` is checked by previewBodies.
 */
export const previewInputSchema = createWebhookSchema
  .pick({ template: true, format: true, max_events: true, vars: true })
  .extend({ events: z.array(z.unknown()).min(1).max(PREVIEW_MAX_EVENTS, `at most ${PREVIEW_MAX_EVENTS} events`).optional() });
export type PreviewInput = z.output<typeof previewInputSchema>;

/** One body a webhook with these fields would send. */
export interface PreviewBody {
  content_type: string;
  body: string;
}

/**
 * Renders events as a webhook with these fields would, without saving anything (CONTRACT 12): the template is
 * checked exactly as on save (422 at `template`), then each event is rendered (422 at `events.<n>`) and packed.
 * `vars` are used for this render only.
 */
export function previewBodies(orgId: string, input: PreviewInput): { bodies: PreviewBody[] } {
  const useTemplate = input.template.trim() !== '';
  const check = useTemplate ? checkPayloadTemplate(input.template, input.vars, ['*']) : null;
  if (check && !check.ok) throw validationError([{ path: 'template', message: check.message }]);
  const template = check?.ok ? check.template : null;

  const now = new Date().toISOString();
  const events: AuditEventData[] = input.events
    ? parseAuditEvents(orgId, input.events, false).map((e) => ({ ...e, id: e.id ?? randomUUID(), org_id: orgId, created_at: e.created_at ?? now }))
    : [sampleEvent(['*'], orgId)];

  const issues: FieldIssue[] = [];
  const rendered: RenderedEvent[] = [];
  events.forEach((event, index) => {
    if (!template) {
      rendered.push({ eventId: event.id, json: renderEnvelope(event) });
      return;
    }
    const result = renderWithTemplate(template, event, input.vars);
    if (result.ok) rendered.push({ eventId: event.id, json: result.json });
    else issues.push({ path: input.events ? `events.${index}` : 'template', message: result.error });
  });
  if (issues.length > 0) throw validationError(issues);

  const { bodies, oversized } = packBodies(input.format, rendered, input.max_events);
  if (oversized.length > 0) throw validationError([{ path: 'events', message: 'an event renders to a body over 1 MB' }]);
  return { bodies: bodies.map((b) => ({ content_type: b.contentType, body: b.body })) };
}
