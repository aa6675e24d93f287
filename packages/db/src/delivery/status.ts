import type { Prisma } from '../client';
import { DeliveryStatus as statuses } from '../generated/enums';

/**
 * A delivery's status (CONTRACT 5). The values are spelled once, by the Prisma schema's enum (`DeliveryStatus`,
 * the column's type); every other module takes them from here.
 */
export type DeliveryStatus = (typeof statuses)[keyof typeof statuses];

/** Every status, in the schema's order: pending, retrying, succeeded, failed. */
export const DELIVERY_STATUSES = Object.values(statuses) as [DeliveryStatus, ...DeliveryStatus[]];

/** A delivery that still has an attempt ahead of it: created and not failed yet, or failed and scheduled again. */
export const QUEUED_STATUSES = [statuses.pending, statuses.retrying] as const;
export type QueuedStatus = (typeof QUEUED_STATUSES)[number];

/** A delivery that has no attempt ahead of it. */
export type FinalStatus = Exclude<DeliveryStatus, QueuedStatus>;

/** Whether a delivery can be sent again (CONTRACT 5 `retryable`): failed, with a stored body. */
export function isRetryable(delivery: { status: DeliveryStatus; bodyEncrypted: string | null }): boolean {
  return delivery.status === 'failed' && delivery.bodyEncrypted !== null;
}

/** {@link guard}.retryable as a Prisma filter, for the reads that page through retryable deliveries (recover). */
export const retryableWhere = {
  status: statuses.failed,
  bodyEncrypted: { not: null },
} as const satisfies Prisma.DeliveryWhereInput;

/** Whether a status has an attempt ahead of it. */
export function isQueued(status: DeliveryStatus): status is QueuedStatus {
  return (QUEUED_STATUSES as readonly DeliveryStatus[]).includes(status);
}

/**
 * The guards of the statements in this folder, each written once. `d` is how a statement names the row's columns:
 * `'d.'` for its alias, `''` where `deliveries` is not aliased.
 *
 * - {@link queued}: the delivery still has an attempt ahead (pending or retrying); a lease, an attempt's record
 *   and a cancel apply only to such a delivery, so a final state is never left again but by a restart.
 * - {@link leaseHeld}: the caller still holds the lease it took (`lease`, a parameter or column of the caller):
 *   only the lease holder moves a leased delivery on.
 * - {@link retryable}: failed with a stored body (CONTRACT 5 `retryable`): the only deliveries a restart takes.
 */
export const guard = {
  queued: (d: string) => `${d}status IN (${QUEUED_STATUSES.map((s) => `'${s}'`).join(', ')})`,
  leaseHeld: (d: string, lease: string) => `${d}leased_until = ${lease}`,
  retryable: (d: string) => `${d}status = '${statuses.failed}' AND ${d}body_encrypted IS NOT NULL`,
} as const;

/** A status value as the column's type, for a text parameter or column: `'failed'::"DeliveryStatus"`. */
export const asStatus = (sql: string) => `${sql}::"DeliveryStatus"`;
