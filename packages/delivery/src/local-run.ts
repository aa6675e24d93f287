import type { LeasedDelivery } from '@gatehook/db/delivery/lease';

/**
 * A leased delivery about to be attempted; `body` is its body in clear when this process has it at hand (fan-out
 * created the delivery and runs its first attempt), so that it is not decrypted again.
 */
export type RunnableDelivery = LeasedDelivery & { body?: string | null };

/** A run reserved in this process before its deliveries are committed, so that they can be created leased. */
export interface LocalRun {
  /** The lease the deliveries are to be created with. */
  leaseUntil: Date;
  /** Starts the attempts of the deliveries created leased until `leaseUntil` (none: the run is given back). */
  start(leased: readonly RunnableDelivery[]): void;
  /** Gives the run back unused: nothing was committed leased. */
  cancel(): void;
}

/**
 * Runs committed deliveries' first attempts in the process that created them (dispatch.ts's LocalDispatcher), as
 * the engine's stages see it: through this interface, so that no stage imports another to reach it.
 */
export interface LocalRuns {
  /** Reserves room for `count` deliveries about to be created leased, or null when they are to be queued. */
  claim(count: number, orgId: string): Promise<LocalRun | null>;
  /** Starts the first attempts of committed deliveries, or queues them when there is no room. */
  dispatch(deliveryIds: readonly string[], orgId: string): Promise<void>;
}
