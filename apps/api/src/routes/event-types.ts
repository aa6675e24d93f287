import { z } from 'zod';
import { EVENT_CATALOGUE } from '@gatehook/core/event-catalogue';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses } from '../http/schemas';

const eventTypesSchema = z.object({
  items: z.array(z.object({ action: z.string(), description: z.string(), payload_fields: z.array(z.string()) })),
});

const body = {
  items: EVENT_CATALOGUE.map((t) => ({
    action: t.action,
    description: t.description,
    payload_fields: t.payloadFields.map((f) => f.name),
  })),
};

/** GET /event-types: the catalogue used to validate subscriptions and conditions. */
export function eventTypeRoutes(): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/event-types',
      operationId: 'listEventTypes',
      tag: 'webhooks',
      summary: 'Every action that can be subscribed to, with its payload fields',
      access: { kind: 'key' },
      responses: { 200: { description: 'The event catalogue', schema: eventTypesSchema }, ...errorResponses(401) },
      async handler() {
        return { status: 200, body };
      },
    }),
  ];
}
