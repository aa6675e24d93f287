import type { Db, Prisma } from './client';
import { Prisma as PrismaSql, type WebhookTask as WebhookTaskRow } from './generated/client';
import { EVENT_SELECT, toOutboxEvent, type EventRow, type OutboxEvent } from './outbox';
import { guard, retryableWhere } from './delivery/status';

export type TaskKind = 'recover' | 'replay';
export type TaskStatus = 'running' | 'succeeded' | 'failed';

/** Position after the last item a task handled, in the order it walks its window. */
export interface TaskCursor {
  at: Date;
  id: string;
}

/** A recover or replay task (CONTRACT 11) as the task engine and the API see it. */
export interface WebhookTask {
  id: string;
  orgId: string;
  webhookId: string;
  kind: TaskKind;
  status: TaskStatus;
  since: Date;
  until: Date;
  total: number | null;
  processed: number;
  cursor: TaskCursor | null;
  error: string | null;
  nextRunAt: Date;
  leasedUntil: Date | null;
  /** The send clock of a paced task (TASK_SEND_RATE): when the slot after the last delivery it scheduled comes. */
  pacedUntil: Date | null;
  createdAt: Date;
  finishedAt: Date | null;
}

type Client = Db | Prisma.TransactionClient;

/** Maps a stored row to the domain task. */
export function toWebhookTask(row: WebhookTaskRow): WebhookTask {
  return {
    id: row.id,
    orgId: row.orgId,
    webhookId: row.webhookId,
    kind: row.kind,
    status: row.status,
    since: row.since,
    until: row.until,
    total: row.total,
    processed: row.processed,
    cursor: row.cursorAt && row.cursorId ? { at: row.cursorAt, id: row.cursorId } : null,
    error: row.error,
    nextRunAt: row.nextRunAt,
    leasedUntil: row.leasedUntil,
    pacedUntil: row.pacedUntil,
    createdAt: row.createdAt,
    finishedAt: row.finishedAt,
  };
}

/**
 * Creates a running task, or returns null when the webhook already has one: the partial unique index
 * `webhook_tasks_running_webhook_id_key` (webhook_id WHERE status = 'running') decides, so two concurrent
 * requests cannot both start one.
 */
export async function createTask(
  tx: Client,
  input: { id: string; orgId: string; webhookId: string; kind: TaskKind; since: Date; until: Date; now: Date },
): Promise<WebhookTask | null> {
  const inserted = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO webhook_tasks (id, org_id, webhook_id, kind, status, since, until, processed, next_run_at, created_at)
    VALUES (${input.id}::uuid, ${input.orgId}::uuid, ${input.webhookId}::uuid, ${input.kind}::"WebhookTaskKind", 'running',
            ${input.since}, ${input.until}, 0, ${input.now}, ${input.now})
    ON CONFLICT (webhook_id) WHERE status = 'running' DO NOTHING
    RETURNING id`;
  if (inserted.length === 0) return null;
  return toWebhookTask(await tx.webhookTask.findUniqueOrThrow({ where: { id: input.id } }));
}

/** The running task of a webhook, if any. */
export async function findRunningTask(db: Client, webhookId: string): Promise<WebhookTask | null> {
  const row = await db.webhookTask.findFirst({ where: { webhookId, status: 'running' } });
  return row ? toWebhookTask(row) : null;
}

/**
 * Takes the next step of a running task whose step is due and that nobody holds: sets a lease until
 * `leaseUntil`. A worker that dies mid-step leaves a lease that expires, and another worker then claims the task
 * and continues from its cursor. One statement; null when the task is finished, held or not due.
 */
export async function claimTask(db: Client, taskId: string, now: Date, leaseUntil: Date): Promise<WebhookTask | null> {
  const rows = await db.webhookTask.updateManyAndReturn({
    where: {
      id: taskId,
      status: 'running',
      nextRunAt: { lte: now },
      OR: [{ leasedUntil: null }, { leasedUntil: { lt: now } }],
    },
    data: { leasedUntil: leaseUntil },
  });
  return rows[0] ? toWebhookTask(rows[0]) : null;
}

/**
 * Locks a task row for the caller's transaction if the caller still holds its lease. A step that outlived its
 * lease (another worker took the task over) finds nothing and must not write.
 */
export async function lockLeasedTask(tx: Prisma.TransactionClient, taskId: string, leaseUntil: Date): Promise<boolean> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM webhook_tasks
    WHERE id = ${taskId}::uuid AND status = 'running' AND leased_until = ${leaseUntil}
    FOR UPDATE`;
  return rows.length > 0;
}

/**
 * Records one step's progress and hands the lease back, in one statement: `handled` more items, the new cursor
 * and send clock, and either the next step's due time or the end (succeeded; `total` becomes what was processed,
 * so the figures agree even when the window changed while the task ran). Returns false when the lease was no
 * longer ours.
 */
export async function advanceTask(
  tx: Client,
  taskId: string,
  leaseUntil: Date,
  step: {
    handled: number;
    cursor: TaskCursor | null;
    done: boolean;
    nextRunAt: Date;
    total?: number | null;
    pacedUntil?: Date | null;
  },
): Promise<boolean> {
  const total = step.total === undefined ? null : step.total;
  const count = await tx.$executeRaw`
    UPDATE webhook_tasks SET
      processed = processed + ${step.handled}::int,
      cursor_at = COALESCE(${step.cursor?.at ?? null}::timestamptz, cursor_at),
      cursor_id = COALESCE(${step.cursor?.id ?? null}::uuid, cursor_id),
      paced_until = COALESCE(${step.pacedUntil ?? null}::timestamptz, paced_until),
      total = CASE WHEN ${step.done} THEN processed + ${step.handled}::int ELSE COALESCE(${total}::int, total) END,
      status = CASE WHEN ${step.done} THEN 'succeeded'::"WebhookTaskStatus" ELSE status END,
      finished_at = CASE WHEN ${step.done} THEN ${step.nextRunAt}::timestamptz ELSE NULL END,
      leased_until = NULL,
      next_run_at = ${step.nextRunAt}::timestamptz
    WHERE id = ${taskId}::uuid AND status = 'running' AND leased_until = ${leaseUntil}::timestamptz`;
  return count > 0;
}

/** Hands a step back without progress: the task waits (pacing) and runs again at `nextRunAt`. */
export async function postponeTask(
  db: Client,
  taskId: string,
  leaseUntil: Date,
  nextRunAt: Date,
  total?: number | null,
): Promise<void> {
  await db.webhookTask.updateMany({
    where: { id: taskId, status: 'running', leasedUntil: leaseUntil },
    data: { leasedUntil: null, nextRunAt, ...(total !== undefined ? { total } : {}) },
  });
}

/** Ends a running task as failed with a readable error (no secret: callers pass reasons, not raw exceptions). */
export async function failTask(db: Client, taskId: string, error: string, now: Date): Promise<void> {
  await db.webhookTask.updateMany({
    where: { id: taskId, status: 'running' },
    data: { status: 'failed', error, finishedAt: now, leasedUntil: null },
  });
}

/** Running tasks whose next step is overdue by more than the grace and that nobody holds (lost jobs, dead workers). */
export async function overdueTasks(db: Client, now: Date, graceMs: number, limit: number): Promise<string[]> {
  const rows = await db.webhookTask.findMany({
    where: {
      status: 'running',
      nextRunAt: { lt: new Date(now.getTime() - graceMs) },
      OR: [{ leasedUntil: null }, { leasedUntil: { lt: now } }],
    },
    select: { id: true },
    orderBy: { nextRunAt: 'asc' },
    take: limit,
  });
  return rows.map((r) => r.id);
}

/**
 * What a webhook has waiting to be sent now: its pending or retrying deliveries already due, and its batch-buffer
 * entries. Each count stops at its cap so the query stays cheap however deep the backlog. Tasks pace on this.
 */
export async function dueBacklog(
  db: Client,
  webhookId: string,
  now: Date,
  caps: { due: number; buffered: number },
): Promise<{ due: number; buffered: number }> {
  const rows = await db.$queryRaw<{ due: number; buffered: number }[]>`
    SELECT
      (SELECT count(*)::int FROM (
         SELECT 1 FROM deliveries
         WHERE webhook_id = ${webhookId}::uuid AND ${PrismaSql.raw(guard.queued(''))} AND next_retry_at <= ${now}
         LIMIT ${caps.due}) d) AS due,
      (SELECT count(*)::int FROM (SELECT 1 FROM batch_items WHERE webhook_id = ${webhookId}::uuid LIMIT ${caps.buffered}) b) AS buffered`;
  return rows[0] ?? { due: 0, buffered: 0 };
}

/** Where a recover task looks: this webhook's failed deliveries with a stored body, created in [since, until). */
function recoverableWhere(task: Pick<WebhookTask, 'webhookId' | 'since' | 'until'>): Prisma.DeliveryWhereInput {
  return { webhookId: task.webhookId, ...retryableWhere, createdAt: { gte: task.since, lt: task.until } };
}

/** How many deliveries a recover task has in its window now. */
export async function countRecoverable(
  db: Client,
  task: Pick<WebhookTask, 'webhookId' | 'since' | 'until'>,
): Promise<number> {
  return db.delivery.count({ where: recoverableWhere(task) });
}

/** The next page of a recover task: retryable failed deliveries after its cursor, in (created_at, id) order. */
export async function recoverablePage(
  db: Client,
  task: Pick<WebhookTask, 'webhookId' | 'since' | 'until' | 'cursor'>,
  limit: number,
): Promise<{ id: string; createdAt: Date }[]> {
  const after = task.cursor
    ? { OR: [{ createdAt: { gt: task.cursor.at } }, { createdAt: task.cursor.at, id: { gt: task.cursor.id } }] }
    : {};
  return db.delivery.findMany({
    where: { ...recoverableWhere(task), ...after },
    select: { id: true, createdAt: true },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    take: limit,
  });
}

/**
 * Where a replay task looks: the organisation's events received in [since, until) of the subscribed actions
 * ($1 organisation, $2 since, $3 until, $4 the actions or null for every one).
 */
const REPLAYABLE = `e.org_id = $1::uuid AND e.received_at >= $2::timestamptz AND e.received_at < $3::timestamptz
       AND ($4::text[] IS NULL OR e.action = ANY($4::text[]))`;

const replayableValues = (task: Pick<WebhookTask, 'orgId' | 'since' | 'until'>, events: readonly string[]) =>
  [task.orgId, task.since.toISOString(), task.until.toISOString(), events.includes('*') ? null : [...events]] as const;

/** How many events of its window a replay task will look at (the condition is applied per event, later). */
export async function countReplayable(
  db: Client,
  task: Pick<WebhookTask, 'orgId' | 'since' | 'until'>,
  events: readonly string[],
): Promise<number> {
  const rows = await db.$queryRawUnsafe<{ n: number }[]>(
    `SELECT count(*)::int AS n FROM audit_events e WHERE ${REPLAYABLE}`,
    ...replayableValues(task, events),
  );
  return rows[0]?.n ?? 0;
}

/**
 * The next page of a replay task: subscribed events after its cursor, in (received_at, id) order, read and mapped
 * as fan-out reads its events (outbox.ts).
 */
export async function replayablePage(
  db: Client,
  task: Pick<WebhookTask, 'orgId' | 'since' | 'until' | 'cursor'>,
  events: readonly string[],
  limit: number,
): Promise<OutboxEvent[]> {
  const rows = await db.$queryRawUnsafe<EventRow[]>(
    `SELECT ${EVENT_SELECT} FROM audit_events e
     WHERE ${REPLAYABLE}
       AND ($5::timestamptz IS NULL OR e.received_at > $5::timestamptz OR (e.received_at = $5::timestamptz AND e.id > $6::uuid))
     ORDER BY e.received_at, e.id
     LIMIT $7::int`,
    ...replayableValues(task, events),
    task.cursor?.at.toISOString() ?? null,
    task.cursor?.id ?? null,
    limit,
  );
  return rows.map(toOutboxEvent);
}
