import type { Prisma } from '@gatehook/db/client';
import { restartDeliveries } from '@gatehook/db/delivery/restart';
import { recoverablePage, type WebhookTask } from '@gatehook/db/webhook-tasks';
import type { PageResult, Scheduler } from './page';
import { isLastPage } from './pacing';

/**
 * Recover: the next page of failed, retryable deliveries of the window get a fresh cycle, as a manual retry does
 * (same delivery id), each due at its send slot.
 */
export async function recoverPage(
  tx: Prisma.TransactionClient,
  task: WebhookTask,
  limit: number,
  now: Date,
  schedule: Scheduler,
): Promise<Omit<PageResult, 'pacedUntil'>> {
  const page = await recoverablePage(tx, task, limit);
  const slots = schedule(page.length);
  const restarted = await restartDeliveries(
    tx,
    page.map((d, i) => ({ id: d.id, dueAt: slots[i]! })),
  );
  const last = page.at(-1);
  return {
    handled: page.length,
    cursor: last ? { at: last.createdAt, id: last.id } : null,
    done: isLastPage(page.length, limit),
    due: restarted.sort((a, b) => a.dueAt.getTime() - b.dueAt.getTime()),
    disabled: null,
  };
}
