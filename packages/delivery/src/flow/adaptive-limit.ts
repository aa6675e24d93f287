import type { SendErrorCode } from '@gatehook/egress/client';
import { BACKOFF_RATIO, INITIAL_ENDPOINT_LIMIT, QUICK_ANSWER_MS } from '../tunables';

/** What an attempt's answer says about its receiver's capacity. */
export type AnswerSignal = 'quick' | 'slow' | 'overloaded' | 'ignored';

/**
 * How an attempt's result moves its endpoint's limit: a quick 2xx raises it, a timeout, a connection error,
 * a 429 or a 5xx lowers it, a slow 2xx leaves it. Other answers (3xx, 4xx, the address policy refusing) say
 * nothing of how much the receiver can take.
 */
export function answerSignal(result: { statusCode: number; error: string | null; durationMs: number }): AnswerSignal {
  const { statusCode, error, durationMs } = result;
  if (statusCode >= 200 && statusCode < 300 && !error) return durationMs <= QUICK_ANSWER_MS ? 'quick' : 'slow';
  if (statusCode === 429 || statusCode >= 500) return 'overloaded';
  if (statusCode === 0 && error !== null && OVERLOAD_ERRORS.has(error)) return 'overloaded';
  return 'ignored';
}

// A TLS or DNS failure is a misconfiguration, not a receiver out of breath, and it costs no slot time; a
// `proxy_error` is the service's own proxy failing, which says nothing of the receiver (ignored, like those).
const OVERLOAD_ERRORS: ReadonlySet<string> = new Set<SendErrorCode>([
  'timeout',
  'connection_refused',
  'connection_reset',
  'network_error',
]);

/**
 * The concurrency one endpoint gets in a worker process, adapted to its receiver by additive increase and
 * multiplicative decrease (as Netflix's concurrency-limits AIMDLimit does): one more request in flight for each
 * quick 2xx while at least half the limit is in use, times BACKOFF_RATIO on each sign of overload, never below 1
 * nor above the configured ceiling (DELIVERY_ENDPOINT_CONCURRENCY). A receiver that hangs ends up holding one slot;
 * a fast one climbs to the ceiling within as many answers.
 */
export class AdaptiveLimit {
  private value: number;
  private lastSignal: AnswerSignal | undefined;

  constructor(
    readonly max: number,
    initial = INITIAL_ENDPOINT_LIMIT,
  ) {
    this.value = Math.max(1, Math.min(max, initial));
  }

  /** Requests this endpoint may have in flight now. */
  get current(): number {
    return Math.floor(this.value);
  }

  /**
   * Whether the limit is climbing: the receiver's latest answer that said anything of its capacity was quick, so
   * each answer to come raises the limit by one while it is busy (it doubles with each round of answers).
   */
  get growing(): boolean {
    return this.lastSignal === 'quick' && this.value < this.max;
  }

  /** Feeds one finished attempt; `inFlight` counts the requests in flight when it finished, itself included. */
  update(signal: AnswerSignal, inFlight: number): void {
    if (signal !== 'ignored') this.lastSignal = signal;
    if (signal === 'quick') {
      if (inFlight * 2 >= this.current) this.value = Math.min(this.max, this.value + 1);
    } else if (signal === 'overloaded') {
      this.value = Math.max(1, this.value * BACKOFF_RATIO);
    }
  }
}
