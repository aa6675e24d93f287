import type { Admission } from './admission';
import type { SendResultSignal, SendScheduler } from './fair-share';
import type { WebhookPace } from './webhook-pace';

/** A send slot held for one request; give it back exactly once, with what the answer says of the receiver. */
export interface Slot {
  release(result?: SendResultSignal): void;
}

/** One send as flow control sees it: its delivery, organisation, webhook, origin and the webhook's rate, if any. */
export interface FlowRequest {
  deliveryId: string;
  orgId: string;
  webhookId: string;
  origin: string;
  /** The webhook's `rate_limit_per_second`; null: not paced. */
  rateLimitPerSecond: number | null;
}

/** Flow control's answer for one send. */
export type Acquired =
  | { kind: 'slot'; slot: Slot }
  /**
   * No slot now: the delivery comes back at `until`. `recallable`: its webhook was full, and it may be recalled
   * sooner once the webhook has room; a paced webhook's delivery comes back at its turn, never earlier.
   */
  | { kind: 'deferred'; until: Date; recallable: boolean };

/**
 * Flow control before one send, whatever decides it: the process's room (deliveries held between lease and
 * record), fair send slots with a per-webhook adaptive limit and an optional per-origin ceiling, and a webhook's
 * own rate. The attempt asks it one question per send ({@link acquire}) and gets a slot or a time to come back.
 */
export interface FlowControl {
  /** The process's room, shared fairly by organisation: runs take their places before they lease. */
  readonly room: Admission;
  /** Waits until `deadline` (epoch ms) at most for a slot for one send; else says when to come back. */
  acquire(request: FlowRequest, deadline: number): Promise<Acquired>;
  /**
   * When a delivery deferred earlier by a webhook that is still full comes back, decided without I/O; null when
   * it may go ahead (its deferral is then forgotten).
   */
  stillDeferred(deliveryId: string): Date | null;
  /** Whether a deferred delivery was recalled since (its webhook has room): it comes back now. */
  isRecalled(deliveryId: string): boolean;
}

/** The flow control of one worker process: its room, its send slots and, when given, the per-webhook rate. */
export function createFlowControl(parts: {
  room: Admission;
  slots: SendScheduler;
  pace?: WebhookPace | undefined;
}): FlowControl {
  const { room, slots, pace } = parts;
  return {
    room,
    async acquire(request, deadline) {
      const turn = await slots.acquire(
        { orgId: request.orgId, webhookId: request.webhookId, origin: request.origin },
        deadline,
      );
      if (!turn) {
        // The time it comes back counts the deliveries already waiting for the webhook, not itself.
        const until = slots.retryAt(request.webhookId);
        // A paced webhook's deliveries come back at their turns (webhook-pace.ts), never recalled early: a recalled
        // delivery whose turn has not come would be turned away again, pushing the turns of the others back.
        const recallable = request.rateLimitPerSecond === null;
        if (recallable) slots.noteWaiting(request.deliveryId, request.webhookId);
        return { kind: 'deferred', until, recallable };
      }
      // A paced webhook's turn is taken once the slot is held, so a granted request leaves at once: taken before, it
      // could wait for a slot and leave together with the turns granted after it, above the rate at the receiver.
      if (request.rateLimitPerSecond !== null && pace) {
        const later = await pace.take(request.orgId, request.webhookId, request.rateLimitPerSecond).catch(() => null);
        if (later !== null) {
          turn.release();
          return { kind: 'deferred', until: later, recallable: false };
        }
      }
      return { kind: 'slot', slot: turn };
    },
    stillDeferred(deliveryId) {
      const webhookId = slots.waitingFor(deliveryId);
      if (webhookId !== undefined && slots.isFull(webhookId)) return slots.retryAt(webhookId);
      slots.doneWaiting(deliveryId);
      return null;
    },
    isRecalled: (deliveryId) => slots.isRecalled(deliveryId),
  };
}
