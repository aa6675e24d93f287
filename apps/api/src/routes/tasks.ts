import { z } from 'zod';
import { actorOf } from '../http/actor';
import { pageQuery } from '../http/pagination';
import { defineRoute, type AnyRoute } from '../http/route';
import { errorResponses, idParams } from '../http/schemas';
import { getTask, listTasks, startTask, type TaskServiceDeps } from '../services/tasks';

const dateTime = (field: string) => z.iso.datetime({ offset: true, message: `${field} must be an ISO 8601 date-time` });

const windowSchema = z.strictObject({
  since: dateTime('since').describe('start of the window, inclusive'),
  until: dateTime('until').optional().describe('end of the window, exclusive; defaults to now'),
});
const taskSchema = z.object({
  id: z.uuid(),
  webhook_id: z.uuid(),
  kind: z.enum(['recover', 'replay']),
  status: z.enum(['running', 'succeeded', 'failed']),
  since: z.iso.datetime(),
  until: z.iso.datetime(),
  total: z.number().int().nullable().describe('items in the window, counted by the first step; null until then'),
  processed: z.number().int(),
  error: z.string().nullable(),
  created_at: z.iso.datetime(),
  finished_at: z.iso.datetime().nullable(),
});
const taskParams = z.object({ id: z.uuid(), task_id: z.uuid() });

const starts = [
  {
    kind: 'recover',
    operationId: 'recoverWebhook',
    summary:
      'Recover: every failed, retryable delivery of the window gets a fresh cycle of 8 attempts (same delivery id)',
  },
  {
    kind: 'replay',
    operationId: 'replayWebhook',
    summary:
      "Replay: the organisation's events received in the window that the webhook now matches are sent as new deliveries",
  },
] as const;

/** Recover and replay tasks (CONTRACT 11). */
export function taskRoutes(deps: TaskServiceDeps): AnyRoute[] {
  return [
    ...starts.map(({ kind, operationId, summary }) =>
      defineRoute({
        method: 'post',
        path: `/webhooks/{id}/${kind}`,
        operationId,
        tag: 'tasks',
        summary,
        access: { kind: 'admin' },
        params: idParams,
        body: windowSchema,
        responses: {
          202: { description: 'Task started', schema: taskSchema },
          ...errorResponses(400, 401, 403, 404, 409, 413, 422),
        },
        async handler({ req, principal, params, body }) {
          return { status: 202, body: await startTask(deps, actorOf(principal, req), params.id, kind, body) };
        },
      }),
    ),
    defineRoute({
      method: 'get',
      path: '/webhooks/{id}/tasks',
      operationId: 'listTasks',
      tag: 'tasks',
      summary: 'Recover and replay tasks of a webhook, newest first',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: idParams,
      query: z.object(pageQuery),
      responses: {
        200: {
          description: 'A page of tasks',
          schema: z.object({ items: z.array(taskSchema), next_cursor: z.string().nullable() }),
        },
        ...errorResponses(400, 401, 403, 404),
      },
      async handler({ principal, params, query }) {
        return { status: 200, body: await listTasks(deps, principal.orgId, params.id, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/{id}/tasks/{task_id}',
      operationId: 'getTask',
      tag: 'tasks',
      summary: 'One recover or replay task with its progress',
      access: { kind: 'permission', permission: 'manage_webhooks' },
      params: taskParams,
      responses: { 200: { description: 'The task', schema: taskSchema }, ...errorResponses(401, 403, 404) },
      async handler({ principal, params }) {
        return { status: 200, body: await getTask(deps, principal.orgId, params.id, params.task_id) };
      },
    }),
  ];
}
