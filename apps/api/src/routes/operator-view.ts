import { z } from 'zod';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses, idParams } from '../http/schemas';
import { getSentRequest, getWebhookStats, type OperatorViewDeps } from '../services/operator-view';

/** Most hours GET /webhooks/{id}/stats covers (a week). */
export const MAX_STATS_HOURS = 168;

const requestSchema = z.object({
  content_type: z.string(),
  headers: z
    .record(z.string(), z.string())
    .describe('as sent by the last attempt; custom header values are [redacted]'),
  body: z
    .string()
    .describe(
      'the body as sent, every variable and custom header value replaced by [redacted]; "[redacted]" alone when it was rendered with values the webhook no longer holds, and "[redacted: …]" when it could not be searched within the redaction budget',
    ),
});
const bucketSchema = z.object({
  start: z.iso.datetime().describe('start of the hour (UTC)'),
  deliveries: z.number().int().describe('deliveries created in the hour'),
  succeeded: z.number().int().describe('of those, succeeded now'),
  failed: z.number().int().describe('of those, failed now'),
  attempts: z.number().int().describe('attempts made in the hour, whichever delivery they were for'),
  p50_ms: z
    .number()
    .int()
    .nullable()
    .describe('median duration of the attempts made in the hour; null without attempts'),
  p99_ms: z
    .number()
    .int()
    .nullable()
    .describe('99th percentile duration of the attempts made in the hour; null without attempts'),
});

/** The operator's view (CONTRACT 17): a delivery's request as sent, and a webhook's hourly statistics. */
export function operatorViewRoutes(deps: OperatorViewDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/webhooks/{id}/deliveries/{delivery_id}/request',
      operationId: 'getDeliveryRequest',
      tag: 'deliveries',
      summary:
        'The request of the last attempt of a delivery, with signature headers; custom header and variable values redacted',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: z.object({ id: z.uuid(), delivery_id: z.uuid() }),
      responses: {
        200: { description: 'The request as sent', schema: requestSchema },
        ...errorResponses(401, 403, 404),
      },
      async handler({ principal, params }) {
        return { status: 200, body: await getSentRequest(deps, principal.orgId, params.id, params.delivery_id) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/{id}/stats',
      operationId: 'getWebhookStats',
      tag: 'webhooks',
      summary:
        'Hourly statistics of the last hours (24 by default), oldest first: deliveries created and attempts made in each hour',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: idParams,
      query: z.object({ hours: z.coerce.number().int().min(1).max(MAX_STATS_HOURS).default(24) }),
      responses: {
        200: { description: 'One bucket per hour', schema: z.object({ buckets: z.array(bucketSchema) }) },
        ...errorResponses(400, 401, 403, 404),
      },
      async handler({ principal, params, query }) {
        return { status: 200, body: await getWebhookStats(deps, principal.orgId, params.id, query.hours) };
      },
    }),
  ];
}
