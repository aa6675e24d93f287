import type { Job } from 'bullmq';
import type { Logger } from '@gatehook/core/logger';
import type { Db } from '@gatehook/db/client';
import { overdueTasks } from '@gatehook/db/webhook-tasks';
import { JOBS, type DeliveryQueues } from '@gatehook/delivery';
import { runTaskStep, type TaskDeps } from '@gatehook/delivery/tasks/step';

/** Steps of different tasks run side by side; each is short (one page), so a few slots serve many tasks. */
export const TASK_CONCURRENCY = 2;
const RECONCILE_LIMIT = 1000;

/**
 * The processor of the `task` queue: one job is one step (one page) of a recover or replay task. Run it with
 * {@link TASK_CONCURRENCY} and a lock of the task's lease (`deps.leaseMs`).
 */
export function taskProcessor(deps: TaskDeps): (job: Job) => Promise<unknown> {
  return async (job: Job) => {
    const { taskId } = JOBS.task.parse(job.data);
    return runTaskStep(deps, taskId);
  };
}

/**
 * The reconciler's share for tasks: re-enqueues the step of every running task that is overdue by more than the
 * grace and not leased (its job was lost with Redis, or its worker died and the lease expired), so any worker
 * continues it from its cursor. Returns how many were re-enqueued.
 */
export async function reconcileTasks(
  deps: { db: Db; queues: DeliveryQueues; logger?: Logger },
  now: number,
  round: string,
  graceMs: number,
): Promise<number> {
  const ids = await overdueTasks(deps.db, new Date(now), graceMs, RECONCILE_LIMIT);
  for (const id of ids) await deps.queues.taskStep(id, new Date(now), round);
  if (ids.length > 0) deps.logger?.info({ tasks: ids.length }, 'reconciler re-enqueued task steps');
  return ids.length;
}
