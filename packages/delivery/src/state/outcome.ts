import { parseRetryAfter, retryDelayMs } from './schedule';
import type { SendErrorCode } from '@gatehook/egress/client';
import type { DeliveryStatus } from '@gatehook/db/delivery/status';
import type { DeliveryErrorCode } from './delivery-error';

/** The attempt error of a failure of EGRESS_PROXY_URL's proxy (CONTRACT 18), not of the receiver. */
export const PROXY_ERROR = 'proxy_error' satisfies SendErrorCode;

/** What one HTTP attempt produced. */
export interface AttemptResult {
  /** Response status; 0 when no response arrived (timeout, connection or TLS error, blocked address). */
  statusCode: number;
  /** Attempt-level error code (`timeout`, `http_503`, `redirect_refused`, ...), or null. */
  error: string | null;
  /** The raw Retry-After response header, if any. */
  retryAfter: string | null;
}

/** The part of a delivery that the decision depends on. */
export interface DeliveryState {
  status: DeliveryStatus;
  /** Attempts of the current cycle that were not answered 429. */
  cycleAttempts: number;
  /** Consecutive attempts answered 429 (column `throttled_streak`); reset by any other answer. */
  throttledStreak: number;
}

/**
 * Consecutive 429s a delivery absorbs without using up one of its attempts. Past it every further 429 counts as
 * a failed attempt, so a receiver that always answers 429 sees at most this many plus the schedule's length of
 * requests per cycle, and the delivery ends failed instead of being retried forever.
 */
export const MAX_CONSECUTIVE_THROTTLED = 20;

/**
 * What an attempt does to the webhook's failure streak (CONTRACT 5): `success` ends it, `failure` starts or
 * extends it, `neutral` (429) leaves it alone, `gone` (410) disables the webhook with reason gone.
 */
export type WebhookEffect = 'success' | 'failure' | 'neutral' | 'gone';

/** The delivery after an attempt, and the attempt's effect on its webhook. */
export interface NextState {
  status: DeliveryStatus;
  cycleAttempts: number;
  /** When the next automatic attempt is due; null when none is. */
  nextRetryAt: Date | null;
  webhookEffect: WebhookEffect;
  /** Consecutive 429s including this attempt; 0 after any other answer. */
  throttledStreak: number;
  /** Delivery-level error, set only when the delivery ends failed: `attempts_exhausted` or `gone`. */
  error: Extract<DeliveryErrorCode, 'attempts_exhausted' | 'gone'> | null;
}

/** How a response status is treated (SPEC 6.6). */
export type AttemptClass = 'success' | 'gone' | 'throttled' | 'failure';

/** Classifies an attempt's status code: 2xx success, 410 gone, 429 throttled, anything else (0 included) failure. */
export function classifyAttempt(statusCode: number): AttemptClass {
  if (statusCode >= 200 && statusCode <= 299) return 'success';
  if (statusCode === 410) return 'gone';
  if (statusCode === 429) return 'throttled';
  // Redirects are refused rather than followed (SPEC 6.4), so a 3xx is as much a failure as a 5xx or no answer.
  return 'failure';
}

/** Options of {@link decideNextState}. */
export interface DecideOptions {
  now: Date;
  /** DELIVERY_RETRY_SCHEDULE: seconds before each attempt of a cycle; its length is the attempt limit. */
  schedule: readonly number[];
  retryAfterCapSeconds: number;
  random?: () => number;
}

/**
 * The delivery's next state after one attempt (SPEC 3.1 and 6.6, CONTRACT 5).
 *
 * - 2xx: succeeded, no retry, effect `success`. The attempt counts towards cycleAttempts.
 * - 410: failed with error `gone` whatever attempts remain, effect `gone`. The attempt counts.
 * - 429: cycleAttempts unchanged, so 429s never use up the attempt limit; status `pending` while no counted
 *   attempt has failed in this cycle (cycleAttempts 0), else `retrying`. The retry waits for Retry-After
 *   (capped at retryAfterCapSeconds) but never less than the delay the next counted attempt would get,
 *   schedule[cycleAttempts] and at least schedule[1] (the first attempt's own delay is 0): `Retry-After: 0` or
 *   a date in the past must not retry at once. Effect `neutral`: the endpoint is not failing. The schedule floor
 *   is not capped by the Retry-After cap. The MAX_CONSECUTIVE_THROTTLED + 1st 429 in a row, and every one after
 *   it, is treated as a failure below (it counts, with effect `failure`).
 * - Anything else (other 4xx, 5xx, refused 3xx, 1xx, statusCode 0 for timeouts and connection errors): the
 *   attempt counts; once schedule.length attempts have counted the delivery fails with `attempts_exhausted`,
 *   otherwise it is retrying after the delay before the next attempt, schedule[cycleAttempts after counting].
 *   Effect `failure`, except for `proxy_error` (the service's egress proxy failed, CONTRACT 18): it counts and is
 *   retried the same way, with effect `neutral`, so it neither starts nor extends the webhook's failure streak;
 *   likewise `auth_failed: proxy_error` (the proxy failed the request for the destination's OAuth token).
 *
 * The incoming status is not consulted: a delivery that is already final must not be attempted at all, which is
 * the caller's check. A cycleAttempts at or past the limit (a shortened schedule after a config change) makes the
 * next failure final and a 429 wait for the last scheduled delay. Throws RangeError only for a 429 when the schedule
 * is empty.
 */
export function decideNextState(state: DeliveryState, result: AttemptResult, opts: DecideOptions): NextState {
  const { now, schedule, retryAfterCapSeconds, random = Math.random } = opts;
  const limit = schedule.length;
  const after = (ms: number) => new Date(now.getTime() + ms);

  const classified = classifyAttempt(result.statusCode);
  const throttledStreak = classified === 'throttled' ? state.throttledStreak + 1 : 0;
  const counted = classified === 'throttled' && throttledStreak > MAX_CONSECUTIVE_THROTTLED ? 'failure' : classified;

  switch (counted) {
    case 'success':
      return {
        status: 'succeeded',
        cycleAttempts: state.cycleAttempts + 1,
        nextRetryAt: null,
        webhookEffect: 'success',
        throttledStreak,
        error: null,
      };
    case 'gone':
      return {
        status: 'failed',
        cycleAttempts: state.cycleAttempts + 1,
        nextRetryAt: null,
        webhookEffect: 'gone',
        throttledStreak,
        error: 'gone',
      };
    case 'throttled': {
      const floorMs = retryDelayMs(schedule, Math.min(Math.max(state.cycleAttempts + 1, 2), limit), random);
      const askedMs = parseRetryAfter(result.retryAfter, now, retryAfterCapSeconds);
      return {
        status: state.cycleAttempts === 0 ? 'pending' : 'retrying',
        cycleAttempts: state.cycleAttempts,
        nextRetryAt: after(Math.max(askedMs ?? 0, floorMs)),
        webhookEffect: 'neutral',
        throttledStreak,
        error: null,
      };
    }
    case 'failure': {
      const cycleAttempts = state.cycleAttempts + 1;
      // The service's own proxy failing says nothing of the endpoint: retried like any failure, blamed on no one.
      // So is the proxy failing a request for the destination's OAuth token (CONTRACT 20).
      const webhookEffect =
        result.error === PROXY_ERROR || result.error === `auth_failed: ${PROXY_ERROR}` ? 'neutral' : 'failure';
      if (cycleAttempts >= limit) {
        return {
          status: 'failed',
          cycleAttempts,
          nextRetryAt: null,
          webhookEffect,
          throttledStreak,
          error: 'attempts_exhausted',
        };
      }
      return {
        status: 'retrying',
        cycleAttempts,
        nextRetryAt: after(retryDelayMs(schedule, cycleAttempts + 1, random)),
        webhookEffect,
        throttledStreak,
        error: null,
      };
    }
  }
}
