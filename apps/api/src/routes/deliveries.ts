import { z } from 'zod';
import { DELIVERY_STATUSES } from '@gatehook/db/delivery/status';
import { pageQuery } from '../http/pagination';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses, idParams } from '../http/schemas';
import {
  getDelivery,
  listAttempts,
  listDeliveries,
  MAX_INLINE_ATTEMPTS,
  retryDelivery,
  testWebhook,
  type DeliveryDeps,
} from '../services/deliveries';

const attemptSchema = z.object({
  at: z.iso.datetime(),
  status_code: z.number().int().describe('0 when no response arrived'),
  error: z
    .string()
    .describe(
      'timeout, connection_refused, tls_error, dns_error, blocked_address, redirect_refused, http_<code>, ... or empty',
    ),
  duration_ms: z.number().int(),
  response_snippet: z.string().describe('first 1 KB of the response body'),
});
const deliverySchema = z.object({
  id: z.uuid().describe('equals the webhook-id header'),
  webhook_id: z.uuid(),
  status: z.enum(DELIVERY_STATUSES),
  event_count: z.number().int(),
  attempt_count: z.number().int(),
  attempts: z.array(attemptSchema).describe(`the latest ${MAX_INLINE_ATTEMPTS} attempts at most, oldest first`),
  attempts_cursor: z
    .string()
    .nullable()
    .describe(
      `null when attempts holds every attempt; otherwise the cursor for GET /webhooks/{id}/deliveries/{delivery_id}/attempts that continues with the older ones`,
    ),
  next_retry_at: z.iso.datetime().optional().describe('absent when no automatic attempt is pending'),
  retryable: z.boolean(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
const deliveryDetailSchema = deliverySchema.extend({ event_ids: z.array(z.uuid()), error: z.string().nullable() });
const testResultSchema = z.object({
  success: z.boolean(),
  status_code: z.number().int().optional(),
  error: z.string().optional(),
  duration_ms: z.number().int(),
  response_snippet: z.string().optional(),
});
const deliveryParams = z.object({ id: z.uuid(), delivery_id: z.uuid() });

/** Delivery history, manual retry and test send (CONTRACT section 4). */
export function deliveryRoutes(deps: DeliveryDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/webhooks/{id}/deliveries',
      operationId: 'listDeliveries',
      tag: 'deliveries',
      summary: 'Recent deliveries of a webhook with their attempt timelines, newest first',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: idParams,
      query: z.object({ ...pageQuery, status: z.enum(DELIVERY_STATUSES).optional() }),
      responses: {
        200: {
          description: 'A page of deliveries',
          schema: z.object({ items: z.array(deliverySchema), next_cursor: z.string().nullable() }),
        },
        ...errorResponses(400, 401, 403, 404),
      },
      async handler({ principal, params, query }) {
        return { status: 200, body: await listDeliveries(deps, principal.orgId, params.id, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/{id}/deliveries/{delivery_id}',
      operationId: 'getDelivery',
      tag: 'deliveries',
      summary: 'One delivery, with its event ids and delivery-level error',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: deliveryParams,
      responses: {
        200: { description: 'The delivery', schema: deliveryDetailSchema },
        ...errorResponses(401, 403, 404),
      },
      async handler({ principal, params }) {
        return { status: 200, body: await getDelivery(deps, principal.orgId, params.id, params.delivery_id) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/{id}/deliveries/{delivery_id}/attempts',
      operationId: 'listDeliveryAttempts',
      tag: 'deliveries',
      summary:
        'Every attempt of a delivery, newest first, a page at a time (start from attempts_cursor to skip the ones shown inline)',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: deliveryParams,
      query: z.object(pageQuery),
      responses: {
        200: {
          description: 'A page of attempts',
          schema: z.object({ items: z.array(attemptSchema), next_cursor: z.string().nullable() }),
        },
        ...errorResponses(400, 401, 403, 404),
      },
      async handler({ principal, params, query }) {
        return { status: 200, body: await listAttempts(deps, principal.orgId, params.id, params.delivery_id, query) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/{id}/deliveries/{delivery_id}/retry',
      operationId: 'retryDelivery',
      tag: 'deliveries',
      summary: 'Retry a failed delivery of an active webhook: a fresh cycle of 8 attempts',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: deliveryParams,
      responses: {
        202: { description: 'Retry scheduled', schema: deliverySchema },
        ...errorResponses(401, 403, 404, 409),
      },
      async handler({ principal, params }) {
        return { status: 202, body: await retryDelivery(deps, principal.orgId, params.id, params.delivery_id) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/{id}/test',
      operationId: 'testWebhook',
      tag: 'deliveries',
      summary: 'Send a webhook.test event and wait for the answer; not stored as a delivery',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: idParams,
      responses: {
        200: { description: 'The result, also when the receiver failed', schema: testResultSchema },
        ...errorResponses(401, 403, 404, 429),
      },
      async handler({ principal, params }) {
        return { status: 200, body: await testWebhook(deps, principal.orgId, params.id) };
      },
    }),
  ];
}
