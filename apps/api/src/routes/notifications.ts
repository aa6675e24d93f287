import { z } from 'zod';
import type { Db } from '@gatehook/db/client';
import { afterCursor, decodeCursor, page, pageQuery } from '../http/pagination';
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
      method: 'get', path: '/notifications', operationId: 'listNotifications', tag: 'webhooks',
      summary: 'In-app notifications, newest first',
      access: { kind: 'admin' },
      query: z.object(pageQuery),
      responses: { 200: { description: 'Notifications', schema: z.object({ items: z.array(notificationSchema), next_cursor: z.string().nullable() }) }, ...errorResponses(400, 401, 403) },
      async handler({ principal, query }) {
        const cursor = decodeCursor(query.cursor);
        const rows = await db.notification.findMany({
          where: {
            orgId: principal.orgId,
            ...afterCursor(cursor),
          },
          orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
          take: query.limit + 1,
        });
        const { items, nextCursor } = page(rows, query.limit);
        return {
          status: 200,
          body: {
            items: items.map((n) => ({
              id: n.id, kind: n.kind, webhook_id: n.webhookId, message: n.message,
              created_at: n.createdAt.toISOString(), read_at: n.readAt?.toISOString() ?? null,
            })),
            next_cursor: nextCursor,
          },
        };
      },
    }),
  ];
}
