import { z } from 'zod';
import { auditEventInputSchema, MAX_EVENTS_PER_REQUEST } from '@gatehook/delivery/audit-event-input';
import { ingestAuditEvents, type IngestDeps } from '@gatehook/delivery/ingest';
import { AppError } from '@gatehook/core/errors';
import { defineRoute, type AnyRoute } from '../http/route';
import { objectBody } from '../http/validation';
import { errorResponses } from '../http/schemas';

const ingestResponse = z.object({ accepted: z.number().int(), ids: z.array(z.uuid()) });
const ingestBody = z.union([z.object({ events: z.array(auditEventInputSchema).min(1).max(MAX_EVENTS_PER_REQUEST) }), auditEventInputSchema]);

/** POST /audit-events: the gateway records audit events (one, or up to 1000 in `events`). */
export function auditEventRoutes(deps: IngestDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/audit-events', operationId: 'ingestAuditEvents', tag: 'audit events',
      summary: 'Record audit events; 202 means they are committed and will be delivered (at least once)',
      access: { kind: 'permission', permission: 'ingest_events' },
      // No body schema: the body is walked once, inside ingestAuditEvents (storability, depth, value count), and
      // each issue names `events.<n>.<field>`. The generic body check would walk it a second time.
      bodyDoc: ingestBody,
      responses: { 202: { description: 'Accepted and durable', schema: ingestResponse }, ...errorResponses(400, 401, 403, 413, 422), 503: { description: 'The event store is unavailable; nothing was recorded' } },
      async handler({ req, principal }) {
        const body = objectBody(req);
        const batch = Object.hasOwn(body, 'events');
        if (batch) {
          const events = body.events;
          if (!Array.isArray(events) || events.length < 1 || events.length > MAX_EVENTS_PER_REQUEST || Object.keys(body).length > 1) {
            throw new AppError('validation_error', 'The request has invalid fields', [{ path: 'events', message: `events must be an array of 1 to ${MAX_EVENTS_PER_REQUEST} events, and the only field` }]);
          }
          return { status: 202, body: await ingestAuditEvents(deps, principal.orgId, events) };
        }
        return { status: 202, body: await ingestAuditEvents(deps, principal.orgId, [body as never], { single: true }) };
      },
    }),
  ];
}
