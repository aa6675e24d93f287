import type { SecretBox } from '@gatehook/core/encryption';
import { batches } from '@gatehook/core/webhook-config';
import type { Db } from '@gatehook/db/client';
import { isDatabaseUnavailable } from '@gatehook/db/errors';
import {
  advanceTask,
  claimTask,
  countRecoverable,
  countReplayable,
  dueBacklog,
  failTask,
  lockLeasedTask,
  postponeTask,
  type WebhookTask,
} from '@gatehook/db/webhook-tasks';
import type { DeliveryQueues } from '../queues/producer';
import type { RenderPool } from '../render/pool';
import { deliveryError, stoppedBy } from '../state/delivery-error';
import { afterAutomaticDisable, type WebhookAnnouncer } from '../state/webhook';
import { nextStepAt, sendSlots, slotsOf, stepLimit } from './pacing';
import type { PageResult, Scheduler } from './page';
import { recoverPage } from './recover';
import { replayPage } from './replay';

export interface TaskDeps {
  db: Db;
  box: SecretBox;
  queues: DeliveryQueues;
  /** Items per step (TASK_PAGE_SIZE). */
  pageSize: number;
  /** The webhook's due backlog under which a step advances (TASK_MAX_BACKLOG). */
  maxBacklog: number;
  /** Deliveries a second a task sends at most (TASK_SEND_RATE); 0 for no cap. */
  sendRate: number;
  /** How long a step is held before another worker may take the task over (TASK_LEASE_MS). */
  leaseMs: number;
  batchLingerMs: number;
  /** The worker's render pool: replay matches and renders there, as fan-out does. */
  render: RenderPool;
  /** Announces a webhook change (an automatic template_error disable) to every process's cache. */
  announce?: WebhookAnnouncer;
  onUnexpectedError?: (taskId: string, error: unknown) => void;
}

export type StepOutcome =
  | { kind: 'skipped' }
  | { kind: 'waiting'; until: Date }
  | { kind: 'advanced'; handled: number; done: boolean }
  | { kind: 'failed'; error: string };

/**
 * Takes one step of a recover or replay task: claims it with a lease, checks the webhook is still active, waits
 * while the webhook's backlog is full or the task's sends are scheduled far enough ahead, else handles one page
 * and records the progress with the cursor and the send clock in one transaction that only the lease holder can
 * commit. Then schedules what it created, at its send slots, and the next step.
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
    const status = webhook?.status === 'paused' || webhook?.status === 'disabled' ? webhook.status : 'deleted';
    const error = deliveryError(stoppedBy(status), `the webhook was ${status} while the task ran`);
    await failTask(deps.db, task.id, error, now);
    return { kind: 'failed', error };
  }

  // The first step counts the window; later pages may find more (a delivery that failed meanwhile) and the final
  // figures are set to what was processed.
  const total =
    task.total === null
      ? task.kind === 'recover'
        ? await countRecoverable(deps.db, task)
        : await countReplayable(deps.db, task, webhook.events)
      : undefined;

  const perDelivery = task.kind === 'replay' && batches(webhook) ? webhook.maxEvents : 1;
  const backlog = await dueBacklog(deps.db, webhook.id, now, {
    due: deps.maxBacklog,
    buffered: deps.maxBacklog * perDelivery,
  });
  const limit = stepLimit({
    backlog,
    perDelivery,
    pageSize: deps.pageSize,
    maxBacklog: deps.maxBacklog,
    rate: deps.sendRate,
    pacedUntil: task.pacedUntil,
    now,
  });
  if ('waitUntil' in limit) {
    await postponeTask(deps.db, task.id, leaseUntil, limit.waitUntil, total);
    await deps.queues.taskStep(task.id, limit.waitUntil);
    return { kind: 'waiting', until: limit.waitUntil };
  }

  let pacedUntil = task.pacedUntil;
  const schedule: Scheduler = (count) => {
    if (deps.sendRate === 0) return Array.from({ length: count }, () => now);
    const slots = sendSlots(count, pacedUntil, now, deps.sendRate);
    pacedUntil = slots.pacedUntil;
    return slots.dueAt;
  };
  const result = await deps.db.$transaction(
    async (tx): Promise<PageResult | null> => {
      if (!(await lockLeasedTask(tx, task.id, leaseUntil))) return null;
      const page =
        task.kind === 'recover'
          ? await recoverPage(tx, task, limit.items, now, schedule)
          : await replayPage(deps.render, tx, task, webhook, limit.items, now, schedule);
      const nextRunAt = deps.sendRate === 0 ? now : nextStepAt(pacedUntil, now);
      await advanceTask(tx, task.id, leaseUntil, {
        handled: page.handled,
        cursor: page.cursor,
        done: page.done,
        nextRunAt,
        total,
        pacedUntil,
      });
      return { ...page, pacedUntil };
    },
    { timeout: Math.max(deps.leaseMs - 1000, 5_000), maxWait: 10_000 },
  );
  // Another worker took the task over while this one was slow: it continues from the cursor.
  if (!result) return { kind: 'skipped' };

  // Each slot is one job, delayed until its slot and queued behind live traffic. A job lost with Redis (or never
  // added: this worker died here) leaves its deliveries pending with a passed next_retry_at: the reconciler
  // re-enqueues them, so they are still sent at least once.
  await deps.queues.deliverScheduled(slotsOf(result.due), task.orgId);
  if (result.disabled) await afterAutomaticDisable(deps, result.disabled);
  if (!result.done) await deps.queues.taskStep(task.id, deps.sendRate === 0 ? now : nextStepAt(result.pacedUntil, now));
  return { kind: 'advanced', handled: result.handled, done: result.done };
}
