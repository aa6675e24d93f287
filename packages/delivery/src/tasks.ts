import type { SecretBox } from '@gatehook/core/encryption';
import type { FieldIssue } from '@gatehook/core/errors';
import type { Db, Prisma } from '@gatehook/db/client';
import {
  advanceTask,
  claimTask,
  countRecoverable,
  countReplayable,
  dueBacklog,
  failTask,
  lockLeasedTask,
  postponeTask,
  recoverablePage,
  replayablePage,
  type TaskCursor,
  type WebhookTask,
} from '@gatehook/db/tasks';
import { isDatabaseUnavailable } from '@gatehook/db/errors';
import type { Webhook } from '@gatehook/db/generated/client';
import { batches, subscribes } from '@gatehook/core/webhook-config';
import { prepareDeliveries } from './deliveries';
import { toEventData } from './event-data';
import { toLiveWebhook } from './webhook-configs';
import { disableWebhookAutomatically, type WebhookAnnouncer } from './webhook-state';
import type { DeliveryQueues } from './jobs';
import { restartDeliveries } from './manual';

/** How long a task whose webhook has a full backlog waits before it looks again. */
export const TASK_WAIT_MS = 100;
/** How far in the future `until` may be (clock skew between the caller and us). */
export const TASK_UNTIL_SLACK_MS = 60_000;

const DAY_MS = 86_400_000;

/**
 * The window rules of CONTRACT 11: `since` before `until`, `until` no more than a minute in the future, `since`
 * no older than the delivery retention (nothing older is kept). Returns the issues, each naming its field.
 */
export function checkTaskWindow(window: { since: Date; until: Date }, now: Date, retentionDays: number): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (window.since.getTime() < now.getTime() - retentionDays * DAY_MS) {
    issues.push({ path: 'since', message: `must be within the last ${retentionDays} days (delivery history retention)` });
  }
  if (window.until.getTime() > now.getTime() + TASK_UNTIL_SLACK_MS) {
    issues.push({ path: 'until', message: 'must not be more than a minute in the future' });
  }
  if (window.since.getTime() >= window.until.getTime()) {
    issues.push({ path: 'since', message: 'must be before until' });
  }
  return issues;
}

/**
 * Pacing (docs/recover-replay.md): how many items the next step may take, 0 meaning "wait". A task keeps the
 * webhook's backlog (deliveries due and not yet sent, plus batch-buffer entries counted as the deliveries they
 * will make) at most `maxBacklog`. The backlog drains only as fast as the receiver answers under the per-origin
 * cap, so a recovery goes at the receiver's own pace and never has more than `maxBacklog` of its jobs ahead of
 * other webhooks' live deliveries. `perDelivery` is how many items make one delivery (max_events when batching).
 */
export function pageLimit(backlog: { due: number; buffered: number }, perDelivery: number, pageSize: number, maxBacklog: number): number {
  const room = maxBacklog - backlog.due - Math.ceil(backlog.buffered / perDelivery);
  return room <= 0 ? 0 : Math.min(pageSize, room * perDelivery);
}

/** Whether a page was the last one of the window. */
export function isLastPage(found: number, pageSize: number): boolean {
  return found < pageSize;
}

export interface TaskDeps {
  db: Db;
  box: SecretBox;
  queues: DeliveryQueues;
  /** Items per step (TASK_PAGE_SIZE). */
  pageSize: number;
  /** The webhook's due backlog under which a step advances (TASK_MAX_BACKLOG). */
  maxBacklog: number;
  /** How long a step is held before another worker may take the task over (TASK_LEASE_MS). */
  leaseMs: number;
  batchLingerMs: number;
  /** Announces a webhook change (an automatic template_error disable) to every process's cache. */
  announce?: WebhookAnnouncer;
  onUnexpectedError?: (taskId: string, error: unknown) => void;
}

export type StepOutcome =
  | { kind: 'skipped' }
  | { kind: 'waiting'; until: Date }
  | { kind: 'advanced'; handled: number; done: boolean }
  | { kind: 'failed'; error: string };

interface PageResult {
  handled: number;
  cursor: TaskCursor | null;
  done: boolean;
  /** Deliveries due now, queued in chunks (one job and one lease per chunk) once the page commits. */
  due: string[];
  disabled: { orgId: string; auditEventId: string } | null;
  flush: boolean;
}

/**
 * Takes one step of a recover or replay task: claims it with a lease, checks the webhook is still active, waits
 * while the webhook's backlog is full, else handles one page and records the progress with the cursor in one
 * transaction that only the lease holder can commit. Then schedules what it created and the next step.
 */
export async function runTaskStep(deps: TaskDeps, taskId: string): Promise<StepOutcome> {
  const now = new Date();
  const leaseUntil = new Date(now.getTime() + deps.leaseMs);
  const task = await claimTask(deps.db, taskId, now, leaseUntil);
  if (!task) return { kind: 'skipped' };
  try {
    return await stepClaimed(deps, task, now, leaseUntil);
  } catch (error) {
    // Postgres away: the lease expires and the reconciler re-enqueues the step. Anything else will not get better
    // by itself: the task ends failed, with a reason that carries no raw error text (it could quote data).
    if (isDatabaseUnavailable(error)) throw error;
    deps.onUnexpectedError?.(taskId, error);
    const message = 'internal_error: the task stopped on an unexpected error (details in the worker log)';
    await failTask(deps.db, taskId, message, new Date());
    return { kind: 'failed', error: message };
  }
}

async function stepClaimed(deps: TaskDeps, task: WebhookTask, now: Date, leaseUntil: Date): Promise<StepOutcome> {
  const webhook = await deps.db.webhook.findUnique({ where: { id: task.webhookId } });
  if (!webhook || webhook.status !== 'active') {
    const status = webhook?.status ?? 'deleted';
    const error = `webhook_${status}: the webhook was ${status} while the task ran`;
    await failTask(deps.db, task.id, error, now);
    return { kind: 'failed', error };
  }

  // The first step counts the window; later pages may find more (a delivery that failed meanwhile) and the final
  // figures are set to what was processed.
  const total = task.total === null
    ? task.kind === 'recover' ? await countRecoverable(deps.db, task) : await countReplayable(deps.db, task, webhook.events)
    : undefined;

  const perDelivery = task.kind === 'replay' && batches(webhook) ? webhook.maxEvents : 1;
  const backlog = await dueBacklog(deps.db, webhook.id, now, { due: deps.maxBacklog, buffered: deps.maxBacklog * perDelivery });
  const limit = pageLimit(backlog, perDelivery, deps.pageSize, deps.maxBacklog);
  if (limit === 0) {
    const until = new Date(now.getTime() + TASK_WAIT_MS);
    await postponeTask(deps.db, task.id, leaseUntil, until, total);
    await deps.queues.taskStep(task.id, until);
    return { kind: 'waiting', until };
  }

  const result = await deps.db.$transaction(
    async (tx): Promise<PageResult | null> => {
      if (!(await lockLeasedTask(tx, task.id, leaseUntil))) return null;
      const page = task.kind === 'recover'
        ? await recoverPage(deps, tx, task, limit, now)
        : await replayPage(deps, tx, task, webhook, limit, now);
      await advanceTask(tx, task.id, leaseUntil, { handled: page.handled, cursor: page.cursor, done: page.done, nextRunAt: now, total });
      return page;
    },
    { timeout: Math.max(deps.leaseMs - 1000, 5_000), maxWait: 10_000 },
  );
  // Another worker took the task over while this one was slow: it continues from the cursor.
  if (!result) return { kind: 'skipped' };

  await deps.queues.deliverNow(result.due);
  if (result.disabled) {
    await deps.announce?.(result.disabled.orgId).catch(() => undefined);
    await deps.queues.fanout(result.disabled.orgId, [result.disabled.auditEventId]);
  }
  if (result.flush) await deps.queues.flushBatch(webhook.id, 0, `task.${task.id}.${now.getTime()}`);
  if (!result.done) await deps.queues.taskStep(task.id, now);
  return { kind: 'advanced', handled: result.handled, done: result.done };
}

/** Recover: the next page of failed, retryable deliveries of the window get a fresh cycle, as a manual retry does. */
async function recoverPage(deps: TaskDeps, tx: Prisma.TransactionClient, task: WebhookTask, limit: number, now: Date): Promise<PageResult> {
  const page = await recoverablePage(tx, task, limit);
  const restarted = await restartDeliveries(tx, page.map((d) => d.id), now);
  const last = page.at(-1);
  return {
    handled: page.length,
    cursor: last ? { at: last.createdAt, id: last.id } : null,
    done: isLastPage(page.length, limit),
    due: restarted.map((d) => d.id),
    disabled: null,
    flush: false,
  };
}

/**
 * Replay: the next page of the organisation's events of the window, matched against the webhook's current
 * subscription and condition (whenever they were received: before the webhook existed too), then sent through
 * the normal pipeline: the batch buffer for a batching webhook, else new deliveries rendered with the current
 * template and format.
 */
async function replayPage(
  deps: TaskDeps,
  tx: Prisma.TransactionClient,
  task: WebhookTask,
  webhook: Webhook,
  limit: number,
  now: Date,
): Promise<PageResult> {
  const rows = await replayablePage(tx, task, webhook.events, limit);
  // Matched and rendered exactly as live traffic: the same compiled condition and template as fan-out.
  const live = toLiveWebhook(webhook, deps.box);
  const matched = rows
    .filter((row) => subscribes(webhook, row.action))
    .map(toEventData)
    .filter((event) => live.matches(event));
  const last = rows.at(-1);
  const result: PageResult = {
    handled: rows.length,
    cursor: last ? { at: last.receivedAt, id: last.id } : null,
    done: isLastPage(rows.length, limit),
    due: [],
    disabled: null,
    flush: false,
  };
  if (matched.length === 0) return result;
  if (batches(webhook)) {
    await tx.batchItem.createMany({
      data: matched.map((event) => ({ webhookId: webhook.id, eventId: event.id, orgId: webhook.orgId, createdAt: now })),
      skipDuplicates: true,
    });
    result.flush = true;
  } else {
    const prepared = prepareDeliveries(live, matched, deps.box, now);
    await tx.delivery.createMany({
      data: prepared.deliveries.map((d) => ({
        id: d.id,
        orgId: webhook.orgId,
        webhookId: webhook.id,
        status: d.status,
        eventIds: [...d.eventIds],
        eventCount: d.eventIds.length,
        bodyEncrypted: d.bodyEncrypted,
        contentType: d.contentType,
        error: d.error,
        nextRetryAt: d.nextRetryAt,
        createdAt: now,
      })),
    });
    result.due = prepared.deliveries.filter((d) => d.status === 'pending').map((d) => d.id);
    result.disabled = prepared.templateBroken ? await disableWebhookAutomatically(tx, webhook.id, 'template_error') : null;
  }
  return result;
}
