import { z } from 'zod';
import { DESTINATION_PRESETS } from '@gatehook/delivery/render/destinations';
import { validationError } from '@gatehook/core/errors';
import { previewInputSchema, previewRender } from '@gatehook/delivery/render/preview';
import type { RenderPool } from '@gatehook/delivery/render/pool';
import { DESTINATIONS, WEBHOOK_FORMATS } from '@gatehook/core/webhook-schema';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses } from '../http/schemas';

const presetsSchema = z.object({
  items: z.array(
    z.object({
      id: z.enum(DESTINATIONS),
      label: z.string(),
      format: z.enum(WEBHOOK_FORMATS),
      max_events: z.number().int(),
      template: z.string(),
      vars: z.array(z.string()).describe('variables the receiver needs (values are set on the webhook)'),
      headers: z.array(z.string()).describe('headers the receiver needs (values are set on the webhook)'),
      auth: z
        .object({
          type: z.literal('oauth2_client_credentials'),
          token_url: z.string(),
          scope: z.string(),
          client_auth: z.literal('body'),
        })
        .nullable()
        .describe(
          'the OAuth 2.0 authentication the receiver takes, without client_id and client_secret (set on the webhook); {tenant} in token_url is replaced by the client',
        ),
    }),
  ),
});
const previewSchema = z.object({ bodies: z.array(z.object({ content_type: z.string(), body: z.string() })) });

const presets = { items: DESTINATION_PRESETS };

/**
 * CONTRACT 12: destination presets and the live preview of a template, format and batching. The preview renders
 * in the API's render pool (CONTRACT 15), so the event loop answers other requests meanwhile.
 */
export function destinationRoutes(render: RenderPool): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/destinations',
      operationId: 'listDestinations',
      tag: 'webhooks',
      summary: 'The preset (template, format, batching, variables and headers) of every destination',
      access: { kind: 'key' },
      responses: {
        200: { description: 'One preset per allowed destination', schema: presetsSchema },
        ...errorResponses(401),
      },
      async handler() {
        return { status: 200, body: presets };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/preview',
      operationId: 'previewWebhookBodies',
      tag: 'webhooks',
      summary: 'Render the bodies a webhook would send, without saving; vars are used for this render only',
      access: { kind: 'admin' },
      body: previewInputSchema,
      responses: {
        200: { description: 'The rendered bodies', schema: previewSchema },
        ...errorResponses(400, 401, 403, 413, 422),
      },
      async handler({ principal, body }) {
        const outcome = await render.preview(principal.orgId, previewRender(principal.orgId, body));
        if (!outcome.ok) throw validationError(outcome.issues);
        return { status: 200, body: { bodies: outcome.bodies } };
      },
    }),
  ];
}
