import { GroupCommit } from '@gatehook/core/group-commit';
import { leaseDeliveries, releaseDeliveries, type LeasedDelivery, type Release } from '@gatehook/db/delivery/lease';
import type { SendResult } from '@gatehook/egress/client';
import type { Admission } from '../flow/admission';
import type { FlowControl } from '../flow/flow-control';
import type { RunnableDelivery } from '../local-run';
import type { Sender } from '../render/request';
import { LEASE_MARGIN_MS, RECORD_BATCH, RECORD_INTERVAL_MS, SLOT_WAIT_MS } from '../tunables';
import { Recorder, type RecordDeps } from './record';
import { acquire, checkRunnable, prepare, send } from './stages';

export interface AttemptDeps extends RecordDeps {
  send: Sender;
  /** Flow control before each send: the room, fair slots, per-webhook limits and rates (flow/flow-control.ts). */
  flow: FlowControl;
  /** The per-attempt timeout; the lease outlasts it so a delivery is never in flight twice. */
  timeoutMs: number;
  onAttempt?: (info: { durationMs: number; statusCode: number; error: string | null }) => void;
}

/** The outcome of one job's deliveries: those turned away by a full webhook, with when to try each again. */
export interface AttemptBatchOutcome {
  sent: number;
  skipped: number;
  cancelled: number;
  busy: { id: string; retryAt: Date }[];
}

/** What came of one delivery's attempt. */
type AttemptResult = { kind: 'sent' } | { kind: 'cancelled'; reason: string } | { kind: 'deferred'; until: Date };

const SENT: AttemptResult = { kind: 'sent' };

/**
 * Makes the next attempts of deliveries (SPEC 3.1, 6.6; CONTRACT 5): one statement leases and reads every delivery
 * of the job; each is then attempted as checkRunnable → acquire → prepare → send → record (stages.ts, record.ts):
 * the request is prepared from the cached webhook configuration and sent once flow control gives it a slot, and its
 * record joins the group commit of every concurrent attempt.
 */
export class AttemptRunner {
  private readonly recorder: Recorder;
  /**
   * Leases given back without an attempt (deferred by a full webhook, cancelled), of every run meanwhile in one
   * statement: a webhook that hangs defers a delivery of nearly every fan-out, and a statement per run doubled
   * the worker's round trips; when its first-answer window closes, dozens of runs end at once.
   */
  private readonly releaser: GroupCommit<Release, void>;

  constructor(private readonly deps: AttemptDeps) {
    this.recorder = new Recorder(deps);
    this.releaser = GroupCommit.withoutResults((items: Release[]) => releaseDeliveries(deps.pool, items), {
      maxBatch: RECORD_BATCH,
      maxConcurrent: 2,
      minIntervalMs: RECORD_INTERVAL_MS,
    });
  }

  /** Places of deliveries between lease and record (flow control's room); every run takes its places before it leases. */
  get admission(): Admission {
    return this.deps.flow.room;
  }

  /**
   * Attempts every due delivery among `ids` once the process has room for them ({@link admission}, shared fairly
   * between `roomKey`s: the organisation of the deliveries); deliveries turned away by a full webhook are returned
   * to reschedule.
   */
  async run(ids: readonly string[], roomKey = ''): Promise<AttemptBatchOutcome> {
    const { flow } = this.deps;
    const outcome: AttemptBatchOutcome = { sent: 0, skipped: 0, cancelled: 0, busy: [] };
    // A delivery already deferred by a webhook that is still full waits again without touching the database:
    // a dead endpoint's backlog must not cost the healthy ones a lease, a read and a release every bounce.
    const due: string[] = [];
    for (const id of ids) {
      const until = flow.stillDeferred(id);
      if (until) outcome.busy.push({ id, retryAt: until });
      else due.push(id);
    }
    if (due.length === 0) return outcome;
    await this.admission.take(due.length, roomKey);
    const ran = await this.runAdmitted(due, roomKey);
    return { ...ran, busy: [...outcome.busy, ...ran.busy] };
  }

  /** Leases and attempts deliveries whose places in {@link admission} are taken; each place is given back as it ends. */
  async runAdmitted(ids: readonly string[], roomKey = ''): Promise<AttemptBatchOutcome> {
    const now = new Date();
    const window = this.leaseWindow(now);
    let leased: LeasedDelivery[];
    try {
      leased = await leaseDeliveries(this.deps.pool, ids, now, window.leaseUntil);
    } catch (error) {
      this.admission.give(ids.length, roomKey);
      throw error;
    }
    // Deliveries already done, leased elsewhere or not yet due take no place.
    this.admission.give(ids.length - leased.length, roomKey);
    const ran = await this.runLeased(leased, window.slotDeadline, roomKey);
    return { ...ran, skipped: ids.length - leased.length };
  }

  /**
   * How long a lease taken now must hold (the wait for a slot, the request's timeout and time to record it), and
   * until when its attempt may wait for a slot.
   */
  leaseWindow(now: Date): { leaseUntil: Date; slotDeadline: number } {
    return {
      leaseUntil: new Date(now.getTime() + SLOT_WAIT_MS + this.deps.timeoutMs + LEASE_MARGIN_MS),
      slotDeadline: now.getTime() + SLOT_WAIT_MS,
    };
  }

  /**
   * Attempts deliveries this process already holds the lease of (taken by {@link runAdmitted}, or created leased by
   * fan-out), each holding its place in {@link admission}, which it gives back once its attempt has ended.
   */
  async runLeased(
    leased: readonly RunnableDelivery[],
    slotDeadline: number,
    roomKey = '',
  ): Promise<AttemptBatchOutcome> {
    const outcome: AttemptBatchOutcome = { sent: 0, skipped: 0, cancelled: 0, busy: [] };
    const releases: Release[] = [];
    await Promise.all(
      leased.map(async (delivery) => {
        try {
          const result = await this.attempt(delivery, releases, slotDeadline);
          if (result.kind === 'sent') outcome.sent += 1;
          else if (result.kind === 'cancelled') outcome.cancelled += 1;
          else outcome.busy.push({ id: delivery.id, retryAt: result.until });
        } finally {
          this.admission.give(1, roomKey);
        }
      }),
    );
    await Promise.all(releases.map((release) => this.releaser.submit(release)));
    // A delivery recalled while its run was still going had no waiting job to bring forward yet: it goes back now.
    const now = new Date();
    for (const busy of outcome.busy) if (this.deps.flow.isRecalled(busy.id)) busy.retryAt = now;
    return outcome;
  }

  /** One attempt: checkRunnable → acquire → prepare → send → record. Leases it does not use go to `releases`. */
  private async attempt(delivery: RunnableDelivery, releases: Release[], slotDeadline: number): Promise<AttemptResult> {
    const { deps } = this;
    const runnable = await checkRunnable(deps.configs, delivery);
    if (runnable.kind === 'cancelled') return this.cancel(delivery, releases, runnable.reason);
    const { webhook } = runnable;

    const acquired = await acquire(deps.flow, delivery, webhook, slotDeadline);
    if (acquired.kind === 'deferred') {
      // No attempt, no failure: the job system brings it back at `until` (or sooner, recalled).
      releases.push({ id: delivery.id, lease: delivery.leasedUntil, dueAt: acquired.dueAt });
      return acquired;
    }

    const startedAt = new Date();
    if (delivery.awaitingFirstSince)
      deps.onStage?.('fanout', Math.max(0, startedAt.getTime() - delivery.awaitingFirstSince.getTime()) / 1000);
    // What flow control learns of the receiver: nothing when the request was never sent.
    let answer: SendResult | undefined;
    try {
      const prepared = prepare(deps, webhook, delivery, startedAt);
      if (prepared.kind === 'cancelled') return this.cancel(delivery, releases, prepared.reason);
      answer = (await send(deps.send, delivery, webhook, prepared.request, startedAt)).result;
    } finally {
      acquired.slot.release(answer);
    }
    deps.onAttempt?.({ durationMs: answer.durationMs, statusCode: answer.statusCode, error: answer.error });
    deps.onStage?.('send', answer.durationMs / 1000);

    await this.recorder.record(delivery, answer, startedAt);
    return SENT;
  }

  /** Gives a delivery's lease back with its failure (`reason`): it will not be attempted. */
  private cancel(delivery: RunnableDelivery, releases: Release[], reason: string): AttemptResult {
    releases.push({ id: delivery.id, lease: delivery.leasedUntil, failWith: reason });
    this.deps.onFinished?.('failed');
    return { kind: 'cancelled', reason };
  }
}

export type { RunnableDelivery };
