import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { threadClock } from '@gatehook/core/cpu-deadline';
import { validationError, type FieldIssue } from '@gatehook/core/errors';
import { createWebhookSchema } from '@gatehook/core/webhook-schema';
import { packBodies, type RenderedEvent } from './bodies';
import { renderEnvelope, type AuditEventData } from './envelope';
import { parseAuditEvents } from '../audit-event-input';
import { checkPayloadTemplate, renderWithTemplate, REQUEST_RENDER_BUDGET_MS, sampleEvent } from './payload-template';

/** Most events one preview renders. */
export const PREVIEW_MAX_EVENTS = 100;

/**
 * Body of POST /webhooks/preview (CONTRACT 12): the rendering fields of a webhook, with the same rules as on save,
 * and optionally the events to render (else the catalogue's sample event). `events` is checked by previewBodies.
 */
export const previewInputSchema = createWebhookSchema
  .pick({ template: true, format: true, max_events: true, vars: true })
  .extend({
    events: z.array(z.unknown()).min(1).max(PREVIEW_MAX_EVENTS, `at most ${PREVIEW_MAX_EVENTS} events`).optional(),
  });
export type PreviewInput = z.output<typeof previewInputSchema>;

/** One body a webhook with these fields would send. */
export interface PreviewBody {
  content_type: string;
  body: string;
}

/** What a preview renders: the request's rendering fields, and its events with ids and times filled in. */
export interface PreviewRender {
  template: string;
  format: PreviewInput['format'];
  max_events: number;
  vars: Record<string, string>;
  events: AuditEventData[];
  /** Whether the events came with the request (issues name `events.<n>`) or are the catalogue's sample. */
  given: boolean;
}

export type PreviewOutcome = { ok: true; bodies: PreviewBody[] } | { ok: false; issues: FieldIssue[] };

/**
 * The events of a preview request, checked and completed as ingestion would (422 at `events.<n>`), or the
 * catalogue's sample event. Cheap and bounded (PREVIEW_MAX_EVENTS): it runs where the request is handled.
 */
export function previewRender(orgId: string, input: PreviewInput, now = new Date()): PreviewRender {
  const at = now.toISOString();
  const events: AuditEventData[] = input.events
    ? parseAuditEvents(orgId, input.events, false).map((e) => ({
        ...e,
        id: e.id ?? randomUUID(),
        org_id: orgId,
        created_at: e.created_at ?? at,
      }))
    : [sampleEvent(['*'], orgId)];
  return {
    template: input.template,
    format: input.format,
    max_events: input.max_events,
    vars: input.vars,
    events,
    given: input.events !== undefined,
  };
}

/**
 * Renders a preview (CONTRACT 12): the template is checked exactly as on save (an issue at `template`), then each
 * event is rendered (an issue at `events.<n>`) and the results packed. Every render of the request shares one
 * budget of `budgetMs` of the render thread's CPU time (CONTRACT 15; core/cpu-deadline.ts): past it the preview
 * stops with an issue at `template`, however fast each event was on its own. Pure; the API runs it in its render
 * pool (render/pool.ts).
 */
export function renderPreview(input: PreviewRender, budgetMs: number = REQUEST_RENDER_BUDGET_MS): PreviewOutcome {
  const deadline = threadClock.deadline(budgetMs);
  const overBudget = (): PreviewOutcome => ({
    ok: false,
    issues: [
      {
        path: 'template',
        message: `rendering the request's events takes longer than the ${budgetMs} ms budget of one request`,
      },
    ],
  });
  const useTemplate = input.template.trim() !== '';
  const check = useTemplate ? checkPayloadTemplate(input.template, input.vars, ['*']) : null;
  if (check && !check.ok) return { ok: false, issues: [{ path: 'template', message: check.message }] };
  const template = check?.ok ? check.template : null;

  const issues: FieldIssue[] = [];
  const rendered: RenderedEvent[] = [];
  for (const [index, event] of input.events.entries()) {
    if (deadline.passed()) return overBudget();
    if (!template) {
      rendered.push({ eventId: event.id, json: renderEnvelope(event) });
      continue;
    }
    // Each render runs on what the request's budget has left: the same deadline, not one of its own.
    const result = renderWithTemplate(template, event, input.vars, { maxDurationMs: budgetMs, timer: () => deadline });
    // A render cut short by the request's deadline is the request's budget, not this event's fault.
    if (deadline.passed()) return overBudget();
    if (result.ok) rendered.push({ eventId: event.id, json: result.json });
    else issues.push({ path: input.given ? `events.${index}` : 'template', message: result.error });
  }
  if (issues.length > 0) return { ok: false, issues };

  const { bodies, oversized } = packBodies(input.format, rendered, input.max_events);
  if (oversized.length > 0)
    return { ok: false, issues: [{ path: 'events', message: 'an event renders to a body over 1 MB' }] };
  return { ok: true, bodies: bodies.map((b) => ({ content_type: b.contentType, body: b.body })) };
}

/** previewRender and renderPreview in one call, throwing the 422; for callers without a render pool (tests). */
export function previewBodies(orgId: string, input: PreviewInput): { bodies: PreviewBody[] } {
  const outcome = renderPreview(previewRender(orgId, input));
  if (!outcome.ok) throw validationError(outcome.issues);
  return { bodies: outcome.bodies };
}
