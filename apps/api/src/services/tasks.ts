import { randomUUID } from 'node:crypto';
import { AppError, notFound, validationError } from '@gatehook/core/errors';
import { recordAuditEvent } from '@gatehook/db/audit-events';
import type { Db } from '@gatehook/db/client';
import {
  createTask,
  findRunningTask,
  toWebhookTask,
  type TaskKind,
  type WebhookTask,
} from '@gatehook/db/webhook-tasks';
import type { DeliveryQueues } from '@gatehook/delivery';
import { checkTaskWindow } from '@gatehook/delivery/tasks/window';
import { auditFields, type Actor } from '../http/actor';
import { byCreatedAt, listPage } from '../http/pagination';

export interface TaskServiceDeps {
  db: Db;
  /** Producer of the first step; without it (or with Redis down) the worker's reconciler starts the task. */
  queues?: DeliveryQueues | undefined;
  retentionDays: number;
}

/** CONTRACT 11 Task. */
export function toTaskView(task: WebhookTask) {
  return {
    id: task.id,
    webhook_id: task.webhookId,
    kind: task.kind,
    status: task.status,
    since: task.since.toISOString(),
    until: task.until.toISOString(),
    total: task.total,
    processed: task.processed,
    error: task.error,
    created_at: task.createdAt.toISOString(),
    finished_at: task.finishedAt?.toISOString() ?? null,
  };
}

const startedAction: Record<TaskKind, string> = {
  recover: 'webhook.recovery_started',
  replay: 'webhook.replay_started',
};

/**
 * POST /webhooks/{id}/recover and /replay: checks the window (422 naming `since` or `until`), requires an active
 * webhook without a running task (409), creates the task and its audit event in one transaction, then enqueues
 * the first step. The partial unique index settles two concurrent starts: one gets the task, the other a 409.
 */
export async function startTask(
  deps: TaskServiceDeps,
  actor: Actor,
  webhookId: string,
  kind: TaskKind,
  body: { since: string; until?: string | undefined },
) {
  const now = new Date();
  const since = new Date(body.since);
  const until = body.until !== undefined ? new Date(body.until) : now;
  const issues = checkTaskWindow({ since, until }, now, deps.retentionDays);
  if (issues.length > 0) throw validationError(issues);

  const task = await deps.db.$transaction(async (tx) => {
    const webhook = await tx.webhook.findFirst({ where: { id: webhookId, orgId: actor.principal.orgId } });
    if (!webhook) throw notFound('Webhook');
    if (webhook.status !== 'active')
      throw new AppError('conflict', `The webhook is ${webhook.status}; only an active webhook can ${kind}`);
    const running = await findRunningTask(tx, webhookId);
    if (running)
      throw new AppError('conflict', `A ${running.kind} task (${running.id}) is already running for this webhook`);
    const created = await createTask(tx, {
      id: randomUUID(),
      orgId: webhook.orgId,
      webhookId,
      kind,
      since,
      until,
      now,
    });
    if (!created) throw new AppError('conflict', 'A task is already running for this webhook');
    const fields = auditFields(actor, { type: 'webhook', payloadKey: 'webhook', id: webhook.id, name: webhook.name });
    await recordAuditEvent(tx, {
      ...fields,
      action: startedAction[kind],
      payload: { ...fields.payload, task_id: created.id, since: since.toISOString(), until: until.toISOString() },
      changes: [],
    });
    return created;
  });
  // If Redis is down the reconciler starts the task once its first step is overdue.
  await deps.queues?.taskStep(task.id, now).catch(() => undefined);
  return toTaskView(task);
}

async function requireWebhook(db: Db, orgId: string, webhookId: string): Promise<void> {
  const webhook = await db.webhook.findFirst({ where: { id: webhookId, orgId }, select: { id: true } });
  if (!webhook) throw notFound('Webhook');
}

/** GET /webhooks/{id}/tasks: newest first, cursor-paginated. */
export async function listTasks(
  deps: TaskServiceDeps,
  orgId: string,
  webhookId: string,
  query: { limit: number; cursor?: string | undefined },
) {
  await requireWebhook(deps.db, orgId, webhookId);
  return listPage(
    query,
    byCreatedAt('desc'),
    ({ where, ...page }) => deps.db.webhookTask.findMany({ where: { webhookId, orgId, ...where }, ...page }),
    (rows) => rows.map((row) => toTaskView(toWebhookTask(row))),
  );
}

/** GET /webhooks/{id}/tasks/{task_id}. */
export async function getTask(deps: TaskServiceDeps, orgId: string, webhookId: string, taskId: string) {
  await requireWebhook(deps.db, orgId, webhookId);
  const row = await deps.db.webhookTask.findFirst({ where: { id: taskId, webhookId, orgId } });
  if (!row) throw notFound('Task');
  return toTaskView(toWebhookTask(row));
}
