import { type AdaptiveLimit } from './adaptive-limit';
import { HOLD_SMOOTHING, MAX_TURN_AWAY_MS, MIN_TURN_AWAY_MS, QUICK_ANSWER_MS, UNKNOWN_HOLD_MS } from '../tunables';

/** What is known of one webhook's receiver in this process: its adaptive limit and its average time per request. */
export interface EndpointPace {
  limit: AdaptiveLimit;
  holdMs: number | undefined;
}

/** An endpoint as the estimate sees it: its pace, its requests in flight and when each started. */
export interface PacedEndpoint {
  readonly pace: EndpointPace;
  readonly inFlight: number;
  readonly started: ReadonlySet<{ at: number }>;
}

/** Feeds the time one answered request held its slot into the endpoint's average. */
export function learnHold(pace: EndpointPace, heldMs: number): void {
  pace.holdMs = pace.holdMs === undefined ? heldMs : pace.holdMs + HOLD_SMOOTHING * (heldMs - pace.holdMs);
}

/**
 * How long a request of `endpoint` holds its slot, as far as is known: its average, or the age of its oldest
 * request in flight when that is longer (a receiver that has just started to hang, or has not answered yet).
 */
export function holdEstimate(endpoint: PacedEndpoint, now: number): number {
  let hold = endpoint.pace.holdMs ?? UNKNOWN_HOLD_MS;
  for (const { at } of endpoint.started) hold = Math.max(hold, now - at);
  return hold;
}

/**
 * Until when a request beyond the line of `endpoint` may wait for its first answer: UNKNOWN_HOLD_MS after its
 * first request started, while it has never answered in this process; undefined when that is past or it has.
 */
export function firstAnswerWindow(endpoint: PacedEndpoint, now: number): number | undefined {
  if (endpoint.pace.holdMs !== undefined) return undefined;
  let first = Infinity;
  for (const { at } of endpoint.started) first = Math.min(first, at);
  if (first === Infinity) return undefined;
  const end = first + UNKNOWN_HOLD_MS;
  return end > now ? end : undefined;
}

/**
 * Whether the `position`-th waiter of a saturated endpoint can get its turn within `left` ms at its pace. A
 * receiver whose limit is climbing (its answers are quick) is judged by the limit it can reach within the wait
 * ({@link reachableLimit}), not by where its limit stands: a fresh webhook starts at 2 and doubles with each round
 * of answers, so judged by its starting limit
 * most of a first burst would be turned away (each delivery back through a waiting job, at least
 * MIN_TURN_AWAY_MS later) while the limit reaches its ceiling within a few round trips. A waiter the estimate
 * lets stay still leaves at its deadline if its turn has not come. `slots` bounds the limit (the process's slots).
 */
export function canServe(endpoint: PacedEndpoint, position: number, left: number, now: number, slots: number): boolean {
  const { limit } = endpoint.pace;
  if (endpoint.inFlight < limit.current) return true;
  const hold = holdEstimate(endpoint, now);
  return (position / reachableLimit(limit, hold, left, slots)) * hold <= left;
}

/**
 * The limit an endpoint can have reached `left` ms from now: while it climbs (quick 2xx answers) it doubles with
 * each round of answers, one round per `hold`, up to its ceiling and the process's slots; otherwise where it
 * stands. Bounded by the rounds that fit in the wait, so a receiver that answers 2xx slowly keeps a short line
 * (and holds few places of the room) instead of one sized for a ceiling it cannot reach in time.
 */
export function reachableLimit(limit: AdaptiveLimit, hold: number, left: number, slots: number): number {
  if (!limit.growing || hold > QUICK_ANSWER_MS) return limit.current;
  const ceiling = Math.min(limit.max, slots);
  const rounds = left / Math.max(1, hold);
  return Math.max(limit.current, Math.min(ceiling, limit.current * 2 ** Math.min(rounds, 30)));
}

/**
 * How long a delivery turned away should stay away: until the `ahead` deliveries before it can have had their
 * turns at the endpoint's pace (`hold` per request over `limit` at once), within [MIN_TURN_AWAY_MS,
 * MAX_TURN_AWAY_MS], spread so that deliveries turned away together do not come back together.
 */
export function stayAwayMs(ahead: number, limit: number, hold: number): number {
  const base = Math.min(MAX_TURN_AWAY_MS, Math.max(MIN_TURN_AWAY_MS, (ahead / limit) * hold));
  return base + Math.floor(Math.random() * Math.min(base, 1_000));
}
