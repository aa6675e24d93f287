import type { TaskCursor } from '@gatehook/db/webhook-tasks';

/** What one step of a task did with its page, for the step to record and schedule. */
export interface PageResult {
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
export type Scheduler = (count: number) => Date[];
