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
import { batches } from '@gatehook/core/webhook-config';
import { createReplayedDeliveries } from '@gatehook/db/delivery/create';
import { restartDeliveries } from '@gatehook/db/delivery/restart';
import { deliveryError, stoppedBy } from './state/delivery-error';
import type { RenderPool } from './render/pool';
import { afterAutomaticDisable, disableWebhookAutomatically, type WebhookAnnouncer } from './state/webhook';
import type { DeliveryQueues } from './jobs';

/** How long a task whose webhook has a full backlog waits before it looks again. */
export const TASK_WAIT_MS = 100;
/**
 * How far ahead a task paced by TASK_SEND_RATE schedules its sends. Its next step comes when less than half of
 * this is left, so a step schedules about half a horizon of sends: one step a second at most rates.
 */
export const TASK_PACING_HORIZON_MS = 1000;
/** A paced task's sends go in one deliver job (one lease statement) per this much of its schedule. */
export const TASK_SEND_TICK_MS = 50;
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

/** Deliveries per deliver job of a task paced at `rate` a second: one tick's worth, at least one. */
export function sendChunk(rate: number): number {
  return Math.max(1, Math.round((rate * TASK_SEND_TICK_MS) / 1000));
}

/**
 * What the next step of a task may take: `items` to handle now, or a time to look again. Two limits apply:
 * - the webhook's backlog (`pageLimit`): while TASK_MAX_BACKLOG of its deliveries are due and unsent, the
 *   receiver is behind and the task adds nothing, so it goes at the receiver's pace whatever the rate;
 * - the send rate (`rate` deliveries a second, 0 for none): the task schedules its sends at most
 *   TASK_PACING_HORIZON_MS ahead of now. `pacedUntil` is its clock, the slot after the last delivery it
 *   scheduled; a clock in the past counts as now, so a task that waited never catches up with a burst.
 * `perDelivery` is how many items make one delivery (max_events when the webhook batches).
 */
export function stepLimit(input: {
  backlog: { due: number; buffered: number };
  perDelivery: number;
  pageSize: number;
  maxBacklog: number;
  rate: number;
  pacedUntil: Date | null;
  now: Date;
}): { items: number } | { waitUntil: Date } {
  const { backlog, perDelivery, pageSize, maxBacklog, rate, pacedUntil, now } = input;
  const waitBacklog = { waitUntil: new Date(now.getTime() + TASK_WAIT_MS) };
  if (rate === 0) {
    const items = pageLimit(backlog, perDelivery, pageSize, maxBacklog);
    return items === 0 ? waitBacklog : { items };
  }
  if (pageLimit(backlog, perDelivery, pageSize, maxBacklog) === 0) return waitBacklog;
  const ahead = pacedUntil === null ? 0 : pacedUntil.getTime() - now.getTime();
  if (ahead > TASK_PACING_HORIZON_MS / 2) return { waitUntil: nextStepAt(pacedUntil, now) };
  const deliveries = Math.ceil(((TASK_PACING_HORIZON_MS - Math.max(0, ahead)) * rate) / 1000);
  return { items: Math.min(pageSize, deliveries * perDelivery) };
}

/** When a paced task's next step is due: once less than half of its horizon is scheduled ahead. */
export function nextStepAt(pacedUntil: Date | null, now: Date): Date {
  if (pacedUntil === null) return now;
  return new Date(Math.max(now.getTime(), pacedUntil.getTime() - TASK_PACING_HORIZON_MS / 2));
}

/**
 * The send slots of `count` deliveries of a task paced at `rate` a second, from its clock (or from now when the
 * clock is past): chunks of {@link sendChunk} deliveries due together, consecutive chunks a chunk's worth of the
 * rate apart. So in any window of W seconds a task's deliveries fall due at most rate × W + sendChunk(rate)
 * times. Returns each delivery's due time, in order, and the clock after them.
 */
export function sendSlots(count: number, pacedUntil: Date | null, now: Date, rate: number): { dueAt: Date[]; pacedUntil: Date } {
  const start = Math.max(now.getTime(), pacedUntil?.getTime() ?? 0);
  const chunk = sendChunk(rate);
  const dueAt = Array.from({ length: count }, (_, i) => new Date(start + Math.floor((Math.floor(i / chunk) * chunk * 1000) / rate)));
  return { dueAt, pacedUntil: new Date(start + Math.ceil((count * 1000) / rate)) };
}

/** Deliveries grouped by due time, in order: one deliver job each. */
export function slotsOf(due: readonly { id: string; dueAt: Date }[]): { ids: string[]; dueAt: Date }[] {
  const slots: { ids: string[]; dueAt: Date }[] = [];
  for (const d of due) {
    const last = slots.at(-1);
    if (last && last.dueAt.getTime() === d.dueAt.getTime()) last.ids.push(d.id);
    else slots.push({ ids: [d.id], dueAt: d.dueAt });
  }
  return slots;
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

interface PageResult {
  handled: number;
  cursor: TaskCursor | null;
  done: boolean;
  /** Deliveries with their send slots, queued once the page commits (one job and one lease per slot). */
  due: { id: string; dueAt: Date }[];
  /** The task's send clock after this page (paced tasks). */
  pacedUntil: Date | null;
  disabled: { orgId: string; auditEventId: string } | null;
}

/** Assigns send slots to the deliveries of a page: the task's schedule when paced, else now for every one. */
type Scheduler = (count: number) => Date[];

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
  const total = task.total === null
    ? task.kind === 'recover' ? await countRecoverable(deps.db, task) : await countReplayable(deps.db, task, webhook.events)
    : undefined;

  const perDelivery = task.kind === 'replay' && batches(webhook) ? webhook.maxEvents : 1;
  const backlog = await dueBacklog(deps.db, webhook.id, now, { due: deps.maxBacklog, buffered: deps.maxBacklog * perDelivery });
  const limit = stepLimit({ backlog, perDelivery, pageSize: deps.pageSize, maxBacklog: deps.maxBacklog, rate: deps.sendRate, pacedUntil: task.pacedUntil, now });
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
      const page = task.kind === 'recover'
        ? await recoverPage(tx, task, limit.items, now, schedule)
        : await replayPage(deps, tx, task, webhook, limit.items, now, schedule);
      const nextRunAt = deps.sendRate === 0 ? now : nextStepAt(pacedUntil, now);
      await advanceTask(tx, task.id, leaseUntil, { handled: page.handled, cursor: page.cursor, done: page.done, nextRunAt, total, pacedUntil });
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

/**
 * Recover: the next page of failed, retryable deliveries of the window get a fresh cycle, as a manual retry does
 * (same delivery id), each due at its send slot.
 */
async function recoverPage(tx: Prisma.TransactionClient, task: WebhookTask, limit: number, now: Date, schedule: Scheduler): Promise<Omit<PageResult, 'pacedUntil'>> {
  const page = await recoverablePage(tx, task, limit);
  const slots = schedule(page.length);
  const restarted = await restartDeliveries(tx, page.map((d, i) => ({ id: d.id, dueAt: slots[i]! })));
  const last = page.at(-1);
  return {
    handled: page.length,
    cursor: last ? { at: last.createdAt, id: last.id } : null,
    done: isLastPage(page.length, limit),
    due: restarted.sort((a, b) => a.dueAt.getTime() - b.dueAt.getTime()),
    disabled: null,
  };
}

/**
 * Replay: the next page of the organisation's events of the window, matched against the webhook's current
 * subscription and condition (whenever they were received: before the webhook existed too), then made into new
 * deliveries rendered with the current template and packed by the current format and max_events, as fan-out and
 * the batch flush pack them, each due at its send slot. A batching webhook's page is packed here rather than
 * through the batch buffer, so that its deliveries can be paced; replayed events are therefore never in one body
 * with live ones, and a page's last body may hold fewer than max_events.
 */
async function replayPage(
  deps: TaskDeps,
  tx: Prisma.TransactionClient,
  task: WebhookTask,
  webhook: Webhook,
  limit: number,
  now: Date,
  schedule: Scheduler,
): Promise<Omit<PageResult, 'pacedUntil'>> {
  const events = await replayablePage(tx, task, webhook.events, limit);
  const last = events.at(-1);
  const result: Omit<PageResult, 'pacedUntil'> = {
    handled: events.length,
    cursor: last ? { at: last.receivedAt, id: last.data.id } : null,
    done: isLastPage(events.length, limit),
    due: [],
    disabled: null,
  };
  if (events.length === 0) return result;
  // Matched and rendered exactly as live traffic, by the same plan in the render pool as fan-out.
  const prepared = await deps.render.plan(webhook.orgId, { webhooks: [webhook], events, now, filter: 'replay', buffer: false });
  if (prepared.deliveries.length === 0) return result;
  const pending = prepared.deliveries.filter((d) => d.status === 'pending');
  const slots = schedule(pending.length);
  const dueAt = new Map(pending.map((d, i) => [d.id, slots[i]!]));
  await createReplayedDeliveries(tx, {
    orgId: webhook.orgId,
    webhookId: webhook.id,
    now,
    deliveries: prepared.deliveries.map((d) => ({ ...d, nextRetryAt: dueAt.get(d.id) ?? d.nextRetryAt })),
  });
  result.due = pending.map((d) => ({ id: d.id, dueAt: dueAt.get(d.id)! }));
  result.disabled = prepared.broken.length > 0 ? await disableWebhookAutomatically(tx, webhook.id, 'template_error') : null;
  return result;
}
