import { z } from 'zod';
import { auditEventInputSchema, MAX_EVENTS_PER_REQUEST } from '@gatehook/delivery/audit-event-input';
import { ingestAuditEvents, type IngestDeps, type IngestResult } from '@gatehook/delivery/ingest';
import { AppError } from '@gatehook/core/errors';
import type { ApiKeyCache } from '../http/api-keys';
import { fastHandler, type FastHandler } from '../http/fast-path';
import { defineRoute, type AnyRoute } from '../http/route';
import { objectBody } from '../http/validation';
import { errorResponses } from '../http/schemas';

const ingestResponse = z.object({ accepted: z.number().int(), ids: z.array(z.uuid()) });
const ingestBodyDoc = z.union([
  z.object({ events: z.array(auditEventInputSchema).min(1).max(MAX_EVENTS_PER_REQUEST) }),
  auditEventInputSchema,
]);

/** The route of ingestion (CONTRACT 6). */
export const INGEST_ROUTE = '/audit-events';
/** The largest ingestion body read (CONTRACT 3). */
export const MAX_INGEST_BODY_BYTES = 5 * 1024 * 1024;

/**
 * POST /audit-events for the exact URL, before Express (a fast route, ../http/fast-path.ts): the gateway's other
 * hot path. Any other spelling, a Content-Encoding or another charset takes the regular route below.
 */
export function ingestionPath(keys: ApiKeyCache, deps: IngestDeps): FastHandler {
  return fastHandler(keys, {
    path: INGEST_ROUTE,
    access: INGEST_ACCESS,
    maxBodyBytes: MAX_INGEST_BODY_BYTES,
    timed: true,
    answer: async (principal, body) => ({ status: 202, body: await ingestBody(deps, principal.orgId, body) }),
  });
}

const INGEST_ACCESS = { kind: 'permission', permission: 'ingest_events' } as const;

/** POST /audit-events: the gateway records audit events (one, or up to 1000 in `events`). */
export function auditEventRoutes(deps: IngestDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: INGEST_ROUTE,
      operationId: 'ingestAuditEvents',
      tag: 'audit events',
      summary: 'Record audit events; 202 means they are committed and will be delivered (at least once)',
      access: INGEST_ACCESS,
      // No body schema: the body is walked once, inside ingestAuditEvents (storability, depth, value count), and
      // each issue names `events.<n>.<field>`. The generic body check would walk it a second time.
      bodyDoc: ingestBodyDoc,
      responses: {
        202: { description: 'Accepted and durable', schema: ingestResponse },
        ...errorResponses(400, 401, 403, 413, 422),
        503: { description: 'The event store is unavailable; nothing was recorded' },
      },
      async handler({ req, principal }) {
        return { status: 202, body: await ingestBody(deps, principal.orgId, objectBody(req)) };
      },
    }),
  ];
}

/** Ingests the JSON object body of POST /audit-events: one event, or `{"events": [...]}`. */
export function ingestBody(deps: IngestDeps, orgId: string, body: Record<string, unknown>): Promise<IngestResult> {
  if (Object.hasOwn(body, 'events')) {
    const events = body.events;
    if (
      !Array.isArray(events) ||
      events.length < 1 ||
      events.length > MAX_EVENTS_PER_REQUEST ||
      Object.keys(body).length > 1
    ) {
      throw new AppError('validation_error', 'The request has invalid fields', [
        {
          path: 'events',
          message: `events must be an array of 1 to ${MAX_EVENTS_PER_REQUEST} events, and the only field`,
        },
      ]);
    }
    return ingestAuditEvents(deps, orgId, events);
  }
  return ingestAuditEvents(deps, orgId, [body as never], { single: true });
}
