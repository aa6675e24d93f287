import { z } from 'zod';
import {
  createWebhookSchema,
  patchWebhookSchema,
  WEBHOOK_STATUSES,
  webhookSchema,
} from '@gatehook/core/webhook-schema';
import type { ManualStatusOperation } from '@gatehook/delivery/state/webhook';
import { actorOf } from '../http/actor';
import { pageQuery } from '../http/pagination';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses, idParams } from '../http/schemas';
import {
  changeWebhookStatus,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  rotateSecret,
  updateWebhook,
  type WebhookDeps,
} from '../services/webhooks';

const createdSchema = webhookSchema.extend({
  secret: z.string().describe('The signing secret (whsec_...). Shown this once; store it now.'),
});
const listSchema = z.object({ items: z.array(webhookSchema), next_cursor: z.string().nullable() });
const rotatedSchema = z.object({ secret: z.string(), previous_valid_until: z.iso.datetime() });

const statusOperations: { operation: ManualStatusOperation; summary: string }[] = [
  { operation: 'enable', summary: 'Re-enable a webhook: active, failure streak cleared, only new events delivered' },
  { operation: 'disable', summary: 'Disable a webhook (reason manual)' },
  { operation: 'pause', summary: 'Pause a webhook; queued events are dropped' },
  { operation: 'resume', summary: 'Resume a paused webhook; only new events are delivered' },
];

/** Webhook management routes (CONTRACT section 4). */
export function webhookRoutes(deps: WebhookDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: '/webhooks',
      operationId: 'createWebhook',
      tag: 'webhooks',
      summary: 'Create a webhook; the signing secret is returned once',
      access: { kind: 'admin' },
      body: createWebhookSchema,
      responses: { 201: { description: 'Created', schema: createdSchema }, ...errorResponses(400, 401, 403, 413, 422) },
      async handler({ req, principal, body }) {
        const { webhook, secret } = await createWebhook(deps, actorOf(principal, req), body);
        return { status: 201, body: { ...webhook, secret } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks',
      operationId: 'listWebhooks',
      tag: 'webhooks',
      summary: 'List webhooks, newest first',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      query: z.object({ ...pageQuery, status: z.enum(WEBHOOK_STATUSES).optional() }),
      responses: { 200: { description: 'A page of webhooks', schema: listSchema }, ...errorResponses(400, 401, 403) },
      async handler({ principal, query }) {
        return { status: 200, body: await listWebhooks(deps, principal.orgId, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/{id}',
      operationId: 'getWebhook',
      tag: 'webhooks',
      summary: 'Get a webhook',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: idParams,
      responses: { 200: { description: 'The webhook', schema: webhookSchema }, ...errorResponses(401, 403, 404) },
      async handler({ principal, params }) {
        return { status: 200, body: await getWebhook(deps, principal.orgId, params.id) };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/webhooks/{id}',
      operationId: 'updateWebhook',
      tag: 'webhooks',
      summary: 'Edit a webhook: only fields present change; blank url or map values keep the stored ones',
      access: { kind: 'admin' },
      params: idParams,
      body: patchWebhookSchema,
      responses: {
        200: { description: 'The updated webhook', schema: webhookSchema },
        ...errorResponses(400, 401, 403, 404, 413, 422),
      },
      async handler({ req, principal, params, body }) {
        return { status: 200, body: await updateWebhook(deps, actorOf(principal, req), params.id, body) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/webhooks/{id}',
      operationId: 'deleteWebhook',
      tag: 'webhooks',
      summary: 'Delete a webhook; pending deliveries are cancelled',
      access: { kind: 'admin' },
      params: idParams,
      responses: { 204: { description: 'Deleted' }, ...errorResponses(401, 403, 404) },
      async handler({ req, principal, params }) {
        await deleteWebhook(deps, actorOf(principal, req), params.id);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/{id}/rotate-secret',
      operationId: 'rotateWebhookSecret',
      tag: 'webhooks',
      summary: 'Issue a new signing secret; the previous one stays valid for the overlap',
      access: { kind: 'admin' },
      params: idParams,
      responses: {
        200: { description: 'The new secret, shown once', schema: rotatedSchema },
        ...errorResponses(401, 403, 404),
      },
      async handler({ req, principal, params }) {
        return { status: 200, body: await rotateSecret(deps, actorOf(principal, req), params.id) };
      },
    }),
    ...statusOperations.map(({ operation, summary }) =>
      defineRoute({
        method: 'post',
        path: `/webhooks/{id}/${operation}`,
        operationId: `${operation}Webhook`,
        tag: 'webhooks',
        summary,
        access: { kind: 'admin' },
        params: idParams,
        responses: {
          200: { description: 'The webhook', schema: webhookSchema },
          ...errorResponses(401, 403, 404, 409),
        },
        async handler({ req, principal, params }) {
          return { status: 200, body: await changeWebhookStatus(deps, actorOf(principal, req), params.id, operation) };
        },
      }),
    ),
  ];
}
