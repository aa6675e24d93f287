import { GroupCommit } from '@gatehook/core/group-commit';
import { recordAttempts, type AttemptRecord } from '@gatehook/db/delivery/record';
import type { SendResult } from '@gatehook/egress/client';
import type { EngineContext } from '../context';
import type { RunnableDelivery } from '../local-run';
import { streakChanges, trippedBreakers } from '../state/circuit-breaker';
import { decideNextState, type NextState, type WebhookEffect } from '../state/outcome';
import { disableWebhook } from '../state/webhook';
import { RECORD_BATCH, RECORD_INTERVAL_MS } from '../tunables';

/** What recording needs besides the engine's context: the retry rules and who hears of finished deliveries. */
export interface RecordDeps extends EngineContext {
  retrySchedule: readonly number[];
  retryAfterCapSeconds: number;
  circuitBreakerSeconds: number;
  onFinished?: (status: 'succeeded' | 'failed') => void;
}

/**
 * The last stage of an attempt: `recorded` with the delivery's next state, or `superseded` when the record did not
 * apply (its lease was lost, or a cancel came meanwhile: the cancel wins, and the attempt still counts).
 */
export type Recorded = { kind: 'recorded'; next: NextState } | { kind: 'superseded' };

type Item = AttemptRecord & { orgId: string; webhookId: string; effect: WebhookEffect };
/** What the record of one attempt did: whether it applied (its lease held), and the automatic disable it calls for. */
interface ItemOutcome {
  applied: boolean;
  disable: 'gone' | 'circuit_breaker' | null;
}

/**
 * Records attempts: decides each one's next state (state/outcome.ts), joins the group commit that writes the attempt
 * rows, the deliveries' next states and the webhooks' failure streaks of every concurrent attempt in one statement,
 * then acts on it: the automatic disable it calls for, the next attempt's job, the finished count.
 */
export class Recorder {
  private readonly commit: GroupCommit<Item, ItemOutcome>;
  /** Automatic disables under way, one per webhook, so concurrent attempts that call for one share it. */
  private readonly disabling = new Map<string, Promise<void>>();

  constructor(private readonly deps: RecordDeps) {
    this.commit = new GroupCommit((items) => this.flush(items), {
      maxBatch: RECORD_BATCH,
      maxConcurrent: 2,
      minIntervalMs: RECORD_INTERVAL_MS,
    });
  }

  /** Records one attempt of `delivery` started at `startedAt` with its answer. */
  async record(delivery: RunnableDelivery, result: SendResult, startedAt: Date): Promise<Recorded> {
    const { deps } = this;
    const next = decideNextState(
      { status: delivery.status, cycleAttempts: delivery.cycleAttempts, throttledStreak: delivery.throttledStreak },
      { statusCode: result.statusCode, error: result.error, retryAfter: result.retryAfter },
      { now: new Date(), schedule: deps.retrySchedule, retryAfterCapSeconds: deps.retryAfterCapSeconds },
    );
    const { applied, disable } = await this.commit.submit({
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
      next: {
        status: next.status,
        cycleAttempts: next.cycleAttempts,
        throttledStreak: next.throttledStreak,
        nextRetryAt: next.nextRetryAt,
        error: next.error,
      },
    });
    // The disable runs here, after the record's statement, never inside the group commit that other attempts wait on.
    if (disable) await this.disable(delivery.orgId, delivery.webhookId, disable);
    if (!applied) return { kind: 'superseded' };
    if (next.nextRetryAt) await deps.queues.deliver(delivery.id, next.nextRetryAt, delivery.orgId);
    if (next.status === 'succeeded' || next.status === 'failed') deps.onFinished?.(next.status);
    return { kind: 'recorded', next };
  }

  /**
   * One statement for every attempt recorded meanwhile. It says, per attempt, whether its record applied and which
   * automatic disable (410 gone, a tripped circuit breaker) it calls for; the attempt runs that itself.
   */
  private async flush(items: Item[]): Promise<ItemOutcome[]> {
    const { deps } = this;
    const now = new Date();
    const changes = streakChanges(
      items.map((i) => ({ webhookId: i.webhookId, effect: i.effect, at: new Date(i.at.getTime() + i.durationMs) })),
    );
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
        .catch((error: unknown) =>
          this.deps.logger?.warn(
            { webhookId, err: (error as Error).message },
            'automatic disable failed; the next attempt tries again',
          ),
        )
        .finally(() => this.disabling.delete(webhookId));
      this.disabling.set(webhookId, running);
    }
    return running;
  }
}
