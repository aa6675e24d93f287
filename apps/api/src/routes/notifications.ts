import { z } from 'zod';
import type { Db } from '@gatehook/db/client';
import { byCreatedAt, listPage, pageQuery } from '../http/pagination';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses } from '../http/schemas';

const notificationSchema = z.object({
  id: z.uuid(),
  kind: z.string().describe('webhook_disabled'),
  webhook_id: z.uuid().nullable(),
  message: z.string(),
  created_at: z.iso.datetime(),
  read_at: z.iso.datetime().nullable(),
});

/** GET /notifications: in-app notifications of the organisation (automatic webhook disables), newest first. */
export function notificationRoutes(db: Db): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/notifications',
      operationId: 'listNotifications',
      tag: 'webhooks',
      summary: 'In-app notifications, newest first',
      access: { kind: 'admin' },
      query: z.object(pageQuery),
      responses: {
        200: {
          description: 'Notifications',
          schema: z.object({ items: z.array(notificationSchema), next_cursor: z.string().nullable() }),
        },
        ...errorResponses(400, 401, 403),
      },
      async handler({ principal, query }) {
        const body = await listPage(
          query,
          byCreatedAt('desc'),
          ({ where, ...page }) => db.notification.findMany({ where: { orgId: principal.orgId, ...where }, ...page }),
          (items) =>
            items.map((n) => ({
              id: n.id,
              kind: n.kind,
              webhook_id: n.webhookId,
              message: n.message,
              created_at: n.createdAt.toISOString(),
              read_at: n.readAt?.toISOString() ?? null,
            })),
        );
        return { status: 200, body };
      },
    }),
  ];
}
