import { isDatabaseUnavailable } from '@gatehook/db/errors';
import { recordFanoutFailures, startFanoutRuns, type FanoutAttempts } from '@gatehook/db/fanout-parking';
import type { EngineContext } from '../context';
import { describeFailure, fanOut } from './fanout';
import type { FanoutRounds } from './fanout-rounds';
import { MAX_FANOUT_ATTEMPTS } from '../tunables';

/** What a guarded fan-out did: events claimed, deliveries created, and the events whose run failed. */
export interface GuardedFanout {
  events: number;
  deliveries: number;
  /** Events whose run failed (or that were parked before running), with their count and whether they are parked. */
  failed: FanoutAttempts[];
}

/**
 * Whether a fan-out job counts its start on each of its events before running: a reconciler copy on its first
 * start, and any job started again after an earlier start that neither completed nor failed (its worker died
 * mid-run, as a heap exhausted by one event would make it). A retry after an ordinary failure (Postgres away) does
 * not count, and neither does the first run of an ingested event: the hot path pays nothing.
 */
export function countsItsStart(job: { attemptsStarted: number; attemptsMade: number }, recovered: boolean): boolean {
  const diedEarlier = job.attemptsStarted - 1 - job.attemptsMade;
  return diedEarlier > 0 || (recovered && job.attemptsStarted <= 1);
}

/**
 * Fans out events so that nothing a tenant's data does can make fan-out fail without end:
 * - a run that may die with its worker (`countsItsStart`) counts its start on every event first, so an event
 *   that kills every worker touching it is parked after MAX_FANOUT_ATTEMPTS starts, without being run again;
 * - a run that throws is split in halves until each failing event is alone, so one poisoned event fails only
 *   itself: the others of the job are fanned out. Each failing event is recorded (its error, one more attempt)
 *   and parked at MAX_FANOUT_ATTEMPTS. Postgres being unreachable is not the event's fault: that error is thrown
 *   for BullMQ to retry the job, and nothing is counted.
 * Failed events stay pending: the reconciler runs each of them again, alone, after its grace, until it succeeds
 * or is parked. Parked events are logged here, counted by the caller and released by an operator
 * (docs/operations.md).
 */
export async function fanOutGuarded(
  ctx: EngineContext,
  orgId: string,
  eventIds: readonly string[],
  options: { counted: boolean; rounds?: FanoutRounds },
): Promise<GuardedFanout> {
  const now = new Date();
  let runnable = eventIds;
  const failed: FanoutAttempts[] = [];
  if (options.counted) {
    const started = await startFanoutRuns(ctx.pool, orgId, eventIds, MAX_FANOUT_ATTEMPTS, now);
    const parked = started.filter((s) => s.parked);
    for (const p of parked) report(ctx, orgId, p, 'its earlier runs never completed (a worker died running it)');
    failed.push(...parked);
    runnable = started.filter((s) => !s.parked).map((s) => s.eventId);
    if (runnable.length === 0) return { events: 0, deliveries: 0, failed };
  }

  const failures: { eventId: string; error: string }[] = [];
  // A run that may die with its worker goes alone, never in a round with others (fanout-rounds.ts).
  const rounds = options.counted ? undefined : options.rounds;
  const done = await isolating(ctx, orgId, runnable, failures, true, rounds);
  if (failures.length > 0) {
    const recorded = await recordFanoutFailures(ctx.pool, orgId, failures, {
      counted: options.counted,
      maxAttempts: MAX_FANOUT_ATTEMPTS,
      now: new Date(),
    });
    const errors = new Map(failures.map((f) => [f.eventId, f.error]));
    for (const r of recorded) report(ctx, orgId, r, errors.get(r.eventId) ?? '');
    failed.push(...recorded);
  }
  return { ...done, failed };
}

/** Runs fan-out over `eventIds`, halving a failing run until its failing events are alone (collected in `failures`). */
async function isolating(
  ctx: EngineContext,
  orgId: string,
  eventIds: readonly string[],
  failures: { eventId: string; error: string }[],
  whole = false,
  rounds?: FanoutRounds,
): Promise<{ events: number; deliveries: number }> {
  try {
    return await (rounds ? rounds.run(orgId, eventIds) : fanOut(ctx, orgId, eventIds));
  } catch (error) {
    if (isDatabaseUnavailable(error)) throw error;
    if (eventIds.length === 1) {
      failures.push({ eventId: eventIds[0]!, error: describeFailure(error) });
      return { events: 0, deliveries: 0 };
    }
    // Once per job: what failed after its commit (Redis away) shows here only, as its halves find nothing left to do.
    if (whole)
      ctx.logger?.warn(
        { orgId, events: eventIds.length, err: describeFailure(error) },
        'fan-out run failed; running its events in halves to isolate the cause',
      );
    const half = Math.ceil(eventIds.length / 2);
    const first = await isolating(ctx, orgId, eventIds.slice(0, half), failures);
    const second = await isolating(ctx, orgId, eventIds.slice(half), failures);
    return { events: first.events + second.events, deliveries: first.deliveries + second.deliveries };
  }
}

function report(ctx: EngineContext, orgId: string, event: FanoutAttempts, error: string): void {
  const fields = { orgId, eventId: event.eventId, attempts: event.attempts, err: error };
  if (event.parked)
    ctx.logger?.error(
      fields,
      'fan-out parked an event: it is not retried until an operator releases it (docs/operations.md)',
    );
  else ctx.logger?.warn(fields, 'fan-out failed on an event; the reconciler runs it again alone');
}
