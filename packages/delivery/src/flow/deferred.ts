import { RECALL_WINDOW_MS, REMEMBERED_WAITERS } from '../tunables';

/**
 * The deliveries this process deferred because their webhook was full, by webhook, oldest first: so that a
 * deferred delivery coming back while its webhook is still full is deferred again without touching the database,
 * and so that deliveries can be recalled early (their waiting jobs brought forward) once the webhook has room.
 * Bounded: past REMEMBERED_WAITERS it starts over (a forgotten delivery only costs a lease when it comes back).
 */
export class DeferredRegistry {
  /** Deferred deliveries, with their webhook. */
  private readonly byDelivery = new Map<string, string>();
  /** The same per webhook, oldest first. */
  private readonly byWebhook = new Map<string, Set<string>>();
  /** Deliveries recalled and not yet back, with their webhook. */
  private readonly recalled = new Map<string, string>();
  /** Per webhook: how many recalled deliveries are on their way back, counted until `until`. */
  private readonly recalling = new Map<string, { count: number; until: number }>();

  /** Remembers that a delivery waits for its webhook. */
  note(deliveryId: string, webhookId: string): void {
    if (this.byDelivery.size >= REMEMBERED_WAITERS && !this.byDelivery.has(deliveryId)) {
      this.byDelivery.clear();
      this.byWebhook.clear();
    }
    this.forget(deliveryId);
    this.byDelivery.set(deliveryId, webhookId);
    let waiting = this.byWebhook.get(webhookId);
    if (!waiting) this.byWebhook.set(webhookId, (waiting = new Set()));
    waiting.add(deliveryId);
  }

  /** The webhook a delivery is known to wait for, if it was deferred before. */
  webhookOf(deliveryId: string): string | undefined {
    return this.byDelivery.get(deliveryId);
  }

  /** How many deliveries wait for a webhook. */
  count(webhookId: string): number {
    return this.byWebhook.get(webhookId)?.size ?? 0;
  }

  /** Whether a delivery was recalled and has not come back yet. */
  isRecalled(deliveryId: string): boolean {
    return this.recalled.has(deliveryId);
  }

  /** Forgets a delivery's wait once it gets a turn (or anything else happens to it). */
  forget(deliveryId: string): void {
    const recalledBy = this.recalled.get(deliveryId);
    if (recalledBy !== undefined) {
      this.recalled.delete(deliveryId);
      const pending = this.recalling.get(recalledBy);
      if (pending && pending.count > 1) pending.count -= 1;
      else this.recalling.delete(recalledBy);
    }
    const webhookId = this.byDelivery.get(deliveryId);
    if (webhookId === undefined) return;
    this.byDelivery.delete(deliveryId);
    const waiting = this.byWebhook.get(webhookId);
    waiting?.delete(deliveryId);
    if (waiting?.size === 0) this.byWebhook.delete(webhookId);
  }

  /**
   * Takes, oldest first, as many of a webhook's waiting deliveries as `room` (requests it could start now) allows,
   * counting those already recalled and on their way back, and marks them recalled. Empty when none wait or there
   * is no room left.
   */
  recall(webhookId: string, room: number, now: number): string[] {
    const waiting = this.byWebhook.get(webhookId);
    if (!waiting) return [];
    let pending = this.recalling.get(webhookId);
    if (pending && pending.until <= now) {
      this.recalling.delete(webhookId);
      pending = undefined;
    }
    const left = room - (pending?.count ?? 0);
    if (left <= 0) return [];
    const ids: string[] = [];
    for (const deliveryId of waiting) {
      ids.push(deliveryId);
      if (ids.length >= left) break;
    }
    for (const deliveryId of ids) {
      this.forget(deliveryId);
      this.recalled.set(deliveryId, webhookId);
    }
    if (this.recalled.size > REMEMBERED_WAITERS) this.recalled.clear();
    this.recalling.set(webhookId, { count: (pending?.count ?? 0) + ids.length, until: now + RECALL_WINDOW_MS });
    return ids;
  }
}
