import type { Logger } from '@gatehook/core/logger';
import type { AttemptBatchOutcome, AttemptRunner } from '../attempt/runner';
import type { LocalRun, LocalRuns } from '../local-run';
import type { DeliveryQueues } from '../queues/producer';
import { DELIVER_CHUNK } from '../tunables';
import { ROOM_WAIT_MS } from '../tunables';

/**
 * Runs fresh deliveries' first attempts in the process that created them, when it has room, instead of a round
 * trip through the deliver queue. Nothing is promised on this path that the queue does not keep: every delivery
 * is leased in Postgres before its attempt (so it is never in flight twice, whoever else holds a job for it), and
 * a delivery whose process dies before its attempt is recorded is still pending, and goes back on the queue by the
 * reconciler once its lease has expired. Room is the runner's {@link AttemptRunner.admission}, shared with the
 * deliver jobs: a fan-out waits up to ROOM_WAIT_MS for places for its deliveries, {@link dispatch} takes them only
 * when free at once; without them, for more than a job's chunk (DELIVER_CHUNK) at once, or once closing,
 * deliveries are queued.
 */
export class LocalDispatcher implements LocalRuns {
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly runner: AttemptRunner,
    private readonly queues: DeliveryQueues,
    private readonly logger?: Logger,
  ) {}

  /**
   * Reserves places for `count` deliveries about to be created (fan-out), waiting up to ROOM_WAIT_MS for them, or
   * null when they are to be queued instead. The places of deliveries the commit did not create are given back
   * when the run starts.
   */
  async claim(count: number, orgId: string): Promise<LocalRun | null> {
    if (this.closed || count > DELIVER_CHUNK || !(await this.runner.admission.takeWithin(count, ROOM_WAIT_MS, orgId)))
      return null;
    if (this.closed) {
      this.runner.admission.give(count, orgId);
      return null;
    }
    const { leaseUntil, slotDeadline } = this.runner.leaseWindow(new Date());
    // Places still reserved here; those of the deliveries started pass to their run, which gives each back.
    let held = count;
    const giveBack = () => {
      this.runner.admission.give(held, orgId);
      held = 0;
    };
    return {
      leaseUntil,
      start: (leased) => {
        held -= Math.min(held, leased.length);
        giveBack();
        if (leased.length > 0)
          this.track(
            this.runner.runLeased(leased, slotDeadline, orgId),
            leased.map((d) => d.id),
            orgId,
          );
      },
      cancel: giveBack,
    };
  }

  /** Starts the first attempts of committed deliveries (leasing them), or queues them when there is no room. */
  readonly dispatch = async (deliveryIds: readonly string[], orgId: string): Promise<void> => {
    if (deliveryIds.length === 0) return;
    if (this.closed || deliveryIds.length > DELIVER_CHUNK || !this.runner.admission.tryTake(deliveryIds.length, orgId))
      return this.queues.deliverNow(deliveryIds, orgId);
    this.track(this.runner.runAdmitted(deliveryIds, orgId), deliveryIds, orgId);
  };

  private track(attempts: Promise<AttemptBatchOutcome>, deliveryIds: readonly string[], orgId: string): void {
    const run: Promise<void> = attempts
      // Deliveries turned away by a full webhook come back at its pace, each under its one waiting job.
      .then((outcome) =>
        this.queues.deliverLater(
          outcome.busy.map((b) => ({ id: b.id, dueAt: b.retryAt })),
          orgId,
        ),
      )
      .catch(async (error: unknown) => {
        this.logger?.warn(
          { deliveries: deliveryIds.length, err: (error as Error).message },
          'local run failed; the deliveries go on the queue',
        );
        // Leases still held make those attempts wait; the reconciler covers whatever this cannot enqueue.
        await this.queues.deliverNow(deliveryIds, orgId).catch(() => undefined);
      })
      .finally(() => this.running.delete(run));
    this.running.add(run);
  }

  /** Runs in progress (for metrics and tests). */
  get inProgress(): number {
    return this.running.size;
  }

  /** Stops running locally and waits for the runs in progress to record their attempts. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.running]);
  }
}

/** Hands committed, due deliveries to their first attempt: in this process when it can, else the deliver queue. */
export function dispatchDeliveries(
  ctx: { local?: LocalRuns | undefined; queues: DeliveryQueues },
  deliveryIds: readonly string[],
  orgId: string,
): Promise<void> {
  return ctx.local ? ctx.local.dispatch(deliveryIds, orgId) : ctx.queues.deliverNow(deliveryIds, orgId);
}
