/**
 * A webhook's failure streak (`failing_since`, the circuit breaker's start) is written only with the attempts that
 * change it: recordAttempts (../delivery/record.ts) embeds these two CTEs, so recording a batch of attempts stays
 * one statement and one round trip.
 */

/** The parameters (as `$n` placeholders of the embedding statement) the streak CTEs read. */
export interface StreakParameters {
  /** `uuid[]`: the webhooks whose streak the batch changes. */
  webhookIds: string;
  /** `bool[]`: whether a success ended the webhook's streak in the batch. */
  cleared: string;
  /** `timestamptz[]`: the first failure after the last success (or null for none). */
  failingFrom: string;
}

/**
 * recordFailureStreaks: two CTEs, `before` and `streak`, for a statement's WITH list.
 *
 * Inputs: per webhook, whether the batch cleared its streak and the failure a new streak starts from.
 * Guards: a change applies where it changes something: a cleared streak is set to the batch's new start, a running
 * one only starts where none was running (a concurrent batch that already started it keeps its start).
 * Result: `before` holds each listed webhook's `failing_since` as it was before this statement.
 */
export function recordFailureStreaks(p: StreakParameters): string {
  return `before AS (
             SELECT id, failing_since FROM webhooks WHERE id = ANY(${p.webhookIds}::uuid[])
           ), streak AS (
             UPDATE webhooks w SET failing_since = s.failing_from
             FROM unnest(${p.webhookIds}::uuid[], ${p.cleared}::bool[], ${p.failingFrom}::timestamptz[]) AS s(id, cleared, failing_from)
             WHERE w.id = s.id AND (
               (s.cleared AND w.failing_since IS DISTINCT FROM s.failing_from) OR (NOT s.cleared AND w.failing_since IS NULL AND s.failing_from IS NOT NULL))
           )`;
}
