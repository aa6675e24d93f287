import { GroupCommit } from '@gatehook/core/group-commit';
import { isDatabaseUnavailable } from '@gatehook/db/errors';
import type { EngineContext } from '../context';
import { DELIVER_CHUNK } from '../tunables';
import { describeFailure, fanOut, fanOutEvents } from './fanout';

type Settled = { ok: { events: number; deliveries: number } } | { error: unknown };

/**
 * Fan-out jobs of one organisation gathered into rounds: a group commit per organisation (GroupCommit). A job runs
 * at once while fewer rounds of its organisation are in flight in this process than it has render threads (each
 * round's plan runs on one thread at a time, so an organisation keeps the render parallelism one job each gave it);
 * otherwise it waits for one of them to end and goes with every job of the organisation that came meanwhile, as one fan-out (one read,
 * one render task, one commit) of at most DELIVER_CHUNK events, so that the deliveries of a round still start
 * in this process. Under no load nothing waits; when a worker falls behind a stream of small jobs (a few events
 * each, as the API enqueues them at a few hundred single-event requests a second), the statements and render tasks
 * per event fall as the backlog grows, instead of every job paying its own. A job of more than DELIVER_CHUNK events
 * is a round of its own.
 *
 * A round that fails for anything but Postgres being away runs each of its jobs again on its own events, so that
 * only the job holding a failing event sees the failure, and its guard (fanout-guard.ts) isolates that event.
 */
export class FanoutRounds {
  private readonly byOrg = new Map<string, GroupCommit<readonly string[], Settled>>();

  constructor(private readonly ctx: EngineContext) {}

  /** Fans out a job's events, in a round with others of its organisation when some are waiting. */
  async run(orgId: string, eventIds: readonly string[]): Promise<{ events: number; deliveries: number }> {
    let rounds = this.byOrg.get(orgId);
    if (rounds === undefined) {
      const created: GroupCommit<readonly string[], Settled> = new GroupCommit((jobs) => this.round(orgId, jobs), {
        maxBatch: DELIVER_CHUNK,
        maxConcurrent: this.ctx.render.threads,
        weigh: (ids) => ids.length,
        // An organisation's rounds are kept only while it has some: thousands of tenants leave nothing behind.
        onIdle: () => {
          if (this.byOrg.get(orgId) === created) this.byOrg.delete(orgId);
        },
      });
      rounds = created;
      this.byOrg.set(orgId, rounds);
    }
    const settled = await rounds.submit(eventIds);
    if ('error' in settled) throw settled.error;
    return settled.ok;
  }

  private async round(orgId: string, jobs: (readonly string[])[]): Promise<Settled[]> {
    if (jobs.length === 1) return [await settle(fanOut(this.ctx, orgId, jobs[0]!))];
    let done;
    try {
      done = await fanOutEvents(this.ctx, orgId, [...new Set(jobs.flat())]);
    } catch (error) {
      if (isDatabaseUnavailable(error)) return jobs.map(() => ({ error }));
      // What failed after the round's commit (Redis away) shows only here: the jobs then find nothing left to do.
      this.ctx.logger?.warn(
        { orgId, jobs: jobs.length, err: describeFailure(error) },
        'fan-out round failed; running each of its jobs again on its own events',
      );
      return Promise.all(jobs.map((ids) => settle(fanOut(this.ctx, orgId, ids))));
    }
    const claimed = new Set(done.claimed);
    // Each job is told the events of its own it claimed, and the deliveries that carry one of them.
    return jobs.map((ids) => {
      const own = new Set(ids);
      return {
        ok: {
          events: [...own].filter((id) => claimed.has(id)).length,
          deliveries: done.created.filter((events) => events.some((id) => own.has(id))).length,
        },
      };
    });
  }
}

function settle(run: Promise<{ events: number; deliveries: number }>): Promise<Settled> {
  return run.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error }),
  );
}
