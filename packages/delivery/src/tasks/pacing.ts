import { TASK_PACING_HORIZON_MS, TASK_SEND_TICK_MS, TASK_WAIT_MS } from '../tunables';
/**
 * How a recover or replay task paces itself (CONTRACT 11, docs/recover-replay.md): pure functions of the webhook's
 * backlog, the task's send rate and its send clock.
 */

/**
 * Pacing (docs/recover-replay.md): how many items the next step may take, 0 meaning "wait". A task keeps the
 * webhook's backlog (deliveries due and not yet sent, plus batch-buffer entries counted as the deliveries they
 * will make) at most `maxBacklog`. The backlog drains only as fast as the receiver answers under the per-origin
 * cap, so a recovery goes at the receiver's own pace and never has more than `maxBacklog` of its jobs ahead of
 * other webhooks' live deliveries. `perDelivery` is how many items make one delivery (max_events when batching).
 */
export function pageLimit(
  backlog: { due: number; buffered: number },
  perDelivery: number,
  pageSize: number,
  maxBacklog: number,
): number {
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
export function sendSlots(
  count: number,
  pacedUntil: Date | null,
  now: Date,
  rate: number,
): { dueAt: Date[]; pacedUntil: Date } {
  const start = Math.max(now.getTime(), pacedUntil?.getTime() ?? 0);
  const chunk = sendChunk(rate);
  const dueAt = Array.from(
    { length: count },
    (_, i) => new Date(start + Math.floor((Math.floor(i / chunk) * chunk * 1000) / rate)),
  );
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
