import { sanitiseText } from '@gatehook/core/sanitise';
import type { Pool } from './client';

/** A pending event's fan-out bookkeeping after a run on it started or failed. */
export interface FanoutAttempts {
  eventId: string;
  /** Fan-out runs on the event that did not complete, this one included. */
  attempts: number;
  /** The event has had its last run: the reconciler leaves it alone until an operator releases it. */
  parked: boolean;
}

type AttemptsRow = { event_id: string; attempts: number; parked: boolean };
const toAttempts = (r: AttemptsRow): FanoutAttempts => ({
  eventId: r.event_id,
  attempts: r.attempts,
  parked: r.parked,
});

/**
 * Counts, in one statement, the start of a fan-out run that may never complete (a reconciler copy, a job whose
 * earlier start died with its worker) on each pending, unparked event among `eventIds`. An event that already had
 * `maxAttempts` runs that did not complete is parked instead of counted. Returns every event it touched.
 */
export async function startFanoutRuns(
  pool: Pool,
  orgId: string,
  eventIds: readonly string[],
  maxAttempts: number,
  now: Date,
): Promise<FanoutAttempts[]> {
  const { rows } = await pool.query<AttemptsRow>({
    name: 'start_fanout_runs',
    // Joined to the list rather than `event_id = ANY($2)`: see packages/db/src/outbox.ts on plans without statistics.
    text: `UPDATE pending_fanout p SET attempts = CASE WHEN p.attempts >= $3 THEN p.attempts ELSE p.attempts + 1 END,
             parked_at = CASE WHEN p.attempts >= $3 THEN $4::timestamptz END
           FROM (SELECT DISTINCT unnest($2::uuid[]) AS id) AS k
           WHERE p.org_id = $1 AND p.event_id = k.id AND p.parked_at IS NULL
           RETURNING p.event_id, p.attempts, p.parked_at IS NOT NULL AS parked`,
    values: [orgId, eventIds, maxAttempts, now.toISOString()],
  });
  return rows.map(toAttempts);
}

/**
 * Records fan-out runs that failed on single events, in one statement: the error (made storable by the one
 * sanitiser) and, unless the run already counted its start, one more attempt; an event that reaches `maxAttempts`
 * is parked. Events no longer pending (another run claimed them) or already parked are left alone.
 */
export async function recordFanoutFailures(
  pool: Pool,
  orgId: string,
  failures: readonly { eventId: string; error: string }[],
  options: { counted: boolean; maxAttempts: number; now: Date },
): Promise<FanoutAttempts[]> {
  if (failures.length === 0) return [];
  const { rows } = await pool.query<AttemptsRow>({
    name: 'record_fanout_failures',
    text: `UPDATE pending_fanout p SET attempts = p.attempts + $4, last_error = f.error,
             parked_at = CASE WHEN p.attempts + $4 >= $5 THEN $6::timestamptz END
           FROM unnest($2::uuid[], $3::text[]) AS f(event_id, error)
           WHERE p.org_id = $1 AND p.event_id = f.event_id AND p.parked_at IS NULL
           RETURNING p.event_id, p.attempts, p.parked_at IS NOT NULL AS parked`,
    values: [
      orgId,
      failures.map((f) => f.eventId),
      failures.map((f) => sanitiseText(f.error)),
      options.counted ? 0 : 1,
      options.maxAttempts,
      options.now.toISOString(),
    ],
  });
  return rows.map(toAttempts);
}

/** How many events are parked, all organisations together (`gatehook_fanout_parked_events`). */
export async function countParkedEvents(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>({
    name: 'count_parked_events',
    text: 'SELECT count(*)::int AS n FROM pending_fanout WHERE parked_at IS NOT NULL',
  });
  return rows[0]?.n ?? 0;
}
