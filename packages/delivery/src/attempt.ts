import { attemptSpan } from '@gatehook/core/tracing';
import { GroupCommit } from '@gatehook/core/group-commit';
import { leaseDeliveries, releaseDeliveries, type LeasedDelivery, type Release } from '@gatehook/db/delivery/lease';
import { recordAttempts, type AttemptRecord } from '@gatehook/db/delivery/record';
import type { SendResult } from '@gatehook/egress/client';
import { Admission } from './flow/admission';
import { streakChanges, trippedBreakers } from './state/circuit-breaker';
import type { EngineContext } from './context';
import { decideNextState, type WebhookEffect } from './state/outcome';
import type { RunnableDelivery } from './local-run';
import type { SendScheduler, SendTurn } from './flow/fair-share';
import { signedRequest, type PreparedRequest, type Sender } from './render/request';
import { openBody } from './render/stored-body';
import type { LiveWebhook } from './webhook-configs';
import type { WebhookPace } from './flow/webhook-pace';
import { disableWebhook } from './state/webhook';
import { deliveryError, stoppedBy } from './state/delivery-error';


export interface AttemptDeps extends EngineContext {
  send: Sender;
  /** The worker's send slots, shared fairly between organisations and webhooks. */
  scheduler: SendScheduler;
  /** Turns of webhooks with a `rate_limit_per_second`, shared by every worker (Redis); without it, none is paced. */
  pace?: WebhookPace;
  retrySchedule: readonly number[];
  retryAfterCapSeconds: number;
  circuitBreakerSeconds: number;
  /** The per-attempt timeout; the lease outlasts it so a delivery is never in flight twice. */
  timeoutMs: number;
  onAttempt?: (info: { durationMs: number; statusCode: number; error: string | null }) => void;
  onFinished?: (status: 'succeeded' | 'failed') => void;
  /** Most deliveries held between lease and record at once ({@link Admission}); unbounded when absent. */
  maxInProgress?: number;
}

/** The outcome of one job's deliveries: those turned away by a full webhook, with when to try each again. */
export interface AttemptBatchOutcome {
  sent: number;
  skipped: number;
  cancelled: number;
  busy: { id: string; retryAt: Date }[];
}

// Time after the request's timeout to record its outcome; a lease past this means the worker died mid-attempt.
const LEASE_MARGIN_MS = 5_000;
/**
 * Longest a leased delivery waits in this process for a send slot (its webhook's and the process's) before it is
 * turned away to come back later. The lease covers this wait, so a delivery is never in flight twice.
 */
export const SLOT_WAIT_MS = 2_000;
/**
 * A delivery turned away is recorded due this much before the time it comes back: its job may run a little early by
 * another process's clock, and a lease needs the delivery due.
 */
const DUE_AGAIN_EARLY_MS = 1_000;
// Most attempt records one statement carries (group commit).
const RECORD_BATCH = 500;
/**
 * Under a steady stream a record statement starts at most this often, and carries every attempt finished
 * meanwhile; after a quiet spell it goes at once. The record comes after the request, so this delays no arrival,
 * only the stored outcome and the delivery's place in the room (docs/delivery.md, step 5).
 */
const RECORD_INTERVAL_MS = 20;

export type { RunnableDelivery };


/** Prepares one delivery's request (pure but for decryption): its body, and headers signed with the live secrets. */
export function prepareRequest(deps: Pick<EngineContext, 'box'>, webhook: LiveWebhook, delivery: RunnableDelivery, now: Date): PreparedRequest {
  const body = delivery.body ?? openBody(deps.box, delivery.bodyEncrypted ?? '', delivery.id);
  return signedRequest(webhook, { id: delivery.id, body, contentType: delivery.contentType ?? 'application/json' }, now);
}

type Recorded = AttemptRecord & { orgId: string; webhookId: string; effect: WebhookEffect };
/** What the record of one attempt did: whether it applied (its lease held), and the automatic disable it calls for. */
interface RecordOutcome {
  applied: boolean;
  disable: 'gone' | 'circuit_breaker' | null;
}

/**
 * Makes the next attempts of deliveries (SPEC 3.1, 6.6; CONTRACT 5) as claim → prepare → send → record:
 * one statement leases and reads every delivery of the job; each request is prepared from the cached webhook
 * configuration and sent when the scheduler gives it a slot; its record joins the group commit that writes the attempt rows,
 * the deliveries' next states and the webhooks' failure streaks of every concurrent attempt in one statement.
 */
export class AttemptRunner {
  private readonly recorder: GroupCommit<Recorded, RecordOutcome>;
  /**
   * Leases given back without an attempt (turned away by a full webhook, cancelled), of every run meanwhile in one
   * statement: a webhook that hangs turns away a delivery of nearly every fan-out, and a statement per run doubled
   * the worker's round trips; when its first-answer window closes, dozens of runs end at once.
   */
  private readonly releaser: GroupCommit<Release, void>;
  /** Automatic disables under way, one per webhook, so concurrent attempts that call for one share it. */
  private readonly disabling = new Map<string, Promise<void>>();
  /** Places of deliveries between lease and record; every run takes its places before it leases. */
  readonly admission: Admission;

  constructor(private readonly deps: AttemptDeps) {
    this.recorder = new GroupCommit((items) => this.flush(items), { maxBatch: RECORD_BATCH, maxConcurrent: 2, minIntervalMs: RECORD_INTERVAL_MS });
    this.releaser = GroupCommit.withoutResults((items: Release[]) => releaseDeliveries(deps.pool, items), { maxBatch: RECORD_BATCH, maxConcurrent: 2, minIntervalMs: RECORD_INTERVAL_MS });
    this.admission = new Admission(deps.maxInProgress ?? Number.POSITIVE_INFINITY);
  }

  /**
   * Attempts every due delivery among `ids` once the process has room for them ({@link admission}, shared fairly
   * between `roomKey`s: the organisation of the deliveries); deliveries turned away by a full webhook are returned
   * to reschedule.
   */
  async run(ids: readonly string[], roomKey = ''): Promise<AttemptBatchOutcome> {
    const { scheduler } = this.deps;
    const outcome: AttemptBatchOutcome = { sent: 0, skipped: 0, cancelled: 0, busy: [] };
    // A delivery already turned away by a webhook that is still full waits again without touching the database:
    // a dead endpoint's backlog must not cost the healthy ones a lease, a read and a release every bounce.
    const due: string[] = [];
    for (const id of ids) {
      const webhookId = scheduler.waitingFor(id);
      if (webhookId !== undefined && scheduler.isFull(webhookId)) outcome.busy.push({ id, retryAt: scheduler.retryAt(webhookId) });
      else {
        scheduler.doneWaiting(id);
        due.push(id);
      }
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
    return { leaseUntil: new Date(now.getTime() + SLOT_WAIT_MS + this.deps.timeoutMs + LEASE_MARGIN_MS), slotDeadline: now.getTime() + SLOT_WAIT_MS };
  }

  /**
   * Attempts deliveries this process already holds the lease of (taken by {@link runAdmitted}, or created leased by
   * fan-out), each holding its place in {@link admission}, which it gives back once its attempt has ended.
   */
  async runLeased(leased: readonly RunnableDelivery[], slotDeadline: number, roomKey = ''): Promise<AttemptBatchOutcome> {
    const outcome: AttemptBatchOutcome = { sent: 0, skipped: 0, cancelled: 0, busy: [] };
    const releases: Release[] = [];
    await Promise.all(
      leased.map(async (delivery) => {
        try {
          const result = await this.attempt(delivery, releases, slotDeadline);
          if (result === 'sent') outcome.sent += 1;
          else if (result === 'cancelled') outcome.cancelled += 1;
          else outcome.busy.push({ id: delivery.id, retryAt: result.busyUntil });
        } finally {
          this.admission.give(1, roomKey);
        }
      }),
    );
    await Promise.all(releases.map((release) => this.releaser.submit(release)));
    // A delivery recalled while its run was still going had no waiting job to bring forward yet: it goes back now.
    const now = new Date();
    for (const busy of outcome.busy) if (this.deps.scheduler.isRecalled(busy.id)) busy.retryAt = now;
    return outcome;
  }

  private async attempt(delivery: RunnableDelivery, releases: Release[], slotDeadline: number): Promise<'sent' | 'cancelled' | { busyUntil: Date }> {
    const { deps } = this;
    const webhook = await deps.configs.get(delivery.orgId, delivery.webhookId);
    const cancel = !webhook
      ? deliveryError('webhook_deleted')
      : webhook.status !== 'active'
        ? deliveryError(stoppedBy(webhook.status))
        : delivery.bodyEncrypted === null
          ? deliveryError('no_body')
          : webhook.unreadable;
    if (cancel || !webhook) {
      releases.push({ id: delivery.id, lease: delivery.leasedUntil, failWith: cancel ?? deliveryError('webhook_deleted') });
      deps.onFinished?.('failed');
      return 'cancelled';
    }

    // The turn comes first (fairly, within SLOT_WAIT_MS); the request is signed when it has come.
    const turn: SendTurn | null = await deps.scheduler.acquire({ orgId: delivery.orgId, webhookId: webhook.id, origin: webhook.origin }, slotDeadline);
    if (!turn) {
      // The time it comes back counts the deliveries already waiting for the webhook, not itself.
      const busyUntil = deps.scheduler.retryAt(webhook.id);
      // A paced webhook's deliveries come back at their turns (webhook-pace.ts), never recalled early: a recalled
      // delivery whose turn has not come would be turned away again, pushing the turns of the others back. One that
      // may be recalled is due from now (a lease needs it due), one that may not from its time.
      const recallable = webhook.rateLimitPerSecond === null;
      if (recallable) deps.scheduler.noteWaiting(delivery.id, webhook.id);
      releases.push({ id: delivery.id, lease: delivery.leasedUntil, dueAt: dueAgain(recallable ? new Date() : busyUntil) });
      return { busyUntil };
    }
    // A paced webhook's turn is taken once the slot is held, so a granted request leaves at once: taken before, it
    // could wait for a slot and leave together with the turns granted after it, above the rate at the receiver.
    if (webhook.rateLimitPerSecond !== null && deps.pace) {
      const later = await deps.pace.take(delivery.orgId, webhook.id, webhook.rateLimitPerSecond).catch(() => null);
      if (later !== null) {
        // Turned away like a busy delivery: no attempt, no failure; the job system brings it back at its turn.
        turn.release();
        releases.push({ id: delivery.id, lease: delivery.leasedUntil, dueAt: dueAgain(later) });
        return { busyUntil: later };
      }
    }
    const startedAt = new Date();
    if (delivery.awaitingFirstSince) deps.onStage?.('fanout', Math.max(0, startedAt.getTime() - delivery.awaitingFirstSince.getTime()) / 1000);
    let result: SendResult;
    // What the scheduler learns of the receiver: nothing when the request was never sent.
    let answered: SendResult | undefined;
    try {
      let request: PreparedRequest;
      try {
        request = prepareRequest(deps, webhook, delivery, startedAt);
      } catch {
        releases.push({ id: delivery.id, lease: delivery.leasedUntil, failWith: deliveryError('secret_unreadable', 'the stored body cannot be decrypted with the configured keys') });
        deps.onFinished?.('failed');
        return 'cancelled';
      }
      const span = attemptSpan({ orgId: delivery.orgId, webhookId: webhook.id, deliveryId: delivery.id, origin: webhook.origin });
      result = await deps.send({ url: request.url, headers: span.headers(request.headers), body: request.body, clientCertificate: request.clientCertificate, auth: request.auth }).catch(
        // The sender reports failures as results; an exception is a bug there, recorded as a network error.
        (): SendResult => ({ statusCode: 0, error: 'network_error', durationMs: Date.now() - startedAt.getTime(), responseSnippet: '', retryAfter: null }),
      );
      answered = result;
      span.end(result);
    } finally {
      turn.release(answered);
    }
    deps.onAttempt?.({ durationMs: result.durationMs, statusCode: result.statusCode, error: result.error });
    deps.onStage?.('send', result.durationMs / 1000);

    const finishedAt = new Date();
    const next = decideNextState(
      { status: delivery.status, cycleAttempts: delivery.cycleAttempts, throttledStreak: delivery.throttledStreak },
      { statusCode: result.statusCode, error: result.error, retryAfter: result.retryAfter },
      { now: finishedAt, schedule: deps.retrySchedule, retryAfterCapSeconds: deps.retryAfterCapSeconds },
    );
    const { applied, disable } = await this.recorder.submit({
      deliveryId: delivery.id,
      orgId: delivery.orgId,
      webhookId: delivery.webhookId,
      lease: delivery.leasedUntil,
      at: startedAt,
      statusCode: result.statusCode,
      error: result.error ?? '',
      durationMs: result.durationMs,
      responseSnippet: result.responseSnippet,
      effect: next.webhookEffect,
      next: { status: next.status, cycleAttempts: next.cycleAttempts, throttledStreak: next.throttledStreak, nextRetryAt: next.nextRetryAt, error: next.error },
    });
    // The disable runs here, after the record's statement, never inside the group commit that other attempts wait on.
    if (disable) await this.disable(delivery.orgId, delivery.webhookId, disable);
    if (applied && next.nextRetryAt) await deps.queues.deliver(delivery.id, next.nextRetryAt, delivery.orgId);
    if (applied && (next.status === 'succeeded' || next.status === 'failed')) deps.onFinished?.(next.status);
    return 'sent';
  }

  /**
   * One statement for every attempt recorded meanwhile. It says, per attempt, whether its record applied and which
   * automatic disable (410 gone, a tripped circuit breaker) it calls for; the attempt runs that itself.
   */
  private async flush(items: Recorded[]): Promise<RecordOutcome[]> {
    const { deps } = this;
    const now = new Date();
    const changes = streakChanges(items.map((i) => ({ webhookId: i.webhookId, effect: i.effect, at: new Date(i.at.getTime() + i.durationMs) })));
    const { applied, failingSince } = await recordAttempts(deps.pool, items, changes, now);
    const tripped = new Set(trippedBreakers(changes, failingSince, now, deps.circuitBreakerSeconds));
    return items.map((i) => ({
      applied: applied.has(i.deliveryId),
      disable: i.effect === 'gone' ? 'gone' : tripped.has(i.webhookId) ? 'circuit_breaker' : null,
    }));
  }

  /** The one automatic disable of a webhook (state/webhook.ts), shared by the attempts that call for it at once. */
  private disable(orgId: string, webhookId: string, reason: 'gone' | 'circuit_breaker'): Promise<void> {
    let running = this.disabling.get(webhookId);
    if (!running) {
      running = disableWebhook(this.deps, orgId, webhookId, reason)
        .then(() => undefined)
        .catch((error: unknown) => this.deps.logger?.warn({ webhookId, err: (error as Error).message }, 'automatic disable failed; the next attempt tries again'))
        .finally(() => this.disabling.delete(webhookId));
      this.disabling.set(webhookId, running);
    }
    return running;
  }
}

/** The due time recorded for a delivery turned away until `at` ({@link DUE_AGAIN_EARLY_MS}). */
function dueAgain(at: Date): Date {
  return new Date(at.getTime() - DUE_AGAIN_EARLY_MS);
}
