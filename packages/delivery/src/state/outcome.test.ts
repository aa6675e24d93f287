import {
  classifyAttempt,
  decideNextState,
  MAX_CONSECUTIVE_THROTTLED,
  type AttemptResult,
  type DeliveryState,
  type NextState,
} from '@gatehook/delivery/state/outcome';

const SCHEDULE = [0, 5, 300, 1800, 7200, 18000, 36000, 36000] as const;
const now = new Date('2024-11-21T18:00:00.000Z');
// random() = 0.5 puts jitter at the centre of its band, so expected delays are the schedule's own values.
const opts = { now, schedule: SCHEDULE, retryAfterCapSeconds: 3600, random: () => 0.5 };
const at = (ms: number) => new Date(now.getTime() + ms);

function attempt(statusCode: number, error: string | null = null, retryAfter: string | null = null): AttemptResult {
  return { statusCode, error, retryAfter };
}

describe('classifyAttempt', () => {
  it.each([
    [200, 'success'],
    [201, 'success'],
    [204, 'success'],
    [299, 'success'],
    [410, 'gone'],
    [429, 'throttled'],
    [0, 'failure'],
    [100, 'failure'],
    [199, 'failure'],
    [300, 'failure'],
    [301, 'failure'],
    [308, 'failure'],
    [400, 'failure'],
    [404, 'failure'],
    [409, 'failure'],
    [500, 'failure'],
    [503, 'failure'],
    [599, 'failure'],
  ])('%i is %s', (status, expected) => {
    expect(classifyAttempt(status)).toBe(expected);
  });
});

describe('decideNextState: SPEC 3.1 and 6.6, row by row', () => {
  it.each<[string, DeliveryState, AttemptResult, Omit<NextState, 'throttledStreak'>]>([
    // 2xx → succeeded, from any in-flight state
    [
      '2xx on the first attempt',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(200),
      { status: 'succeeded', cycleAttempts: 1, nextRetryAt: null, webhookEffect: 'success', error: null },
    ],
    [
      '204 while retrying',
      { status: 'retrying', cycleAttempts: 3, throttledStreak: 0 },
      attempt(204),
      { status: 'succeeded', cycleAttempts: 4, nextRetryAt: null, webhookEffect: 'success', error: null },
    ],
    [
      '2xx on the last attempt',
      { status: 'retrying', cycleAttempts: 7, throttledStreak: 0 },
      attempt(202),
      { status: 'succeeded', cycleAttempts: 8, nextRetryAt: null, webhookEffect: 'success', error: null },
    ],
    [
      '2xx after a 429 on the first attempt',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(299),
      { status: 'succeeded', cycleAttempts: 1, nextRetryAt: null, webhookEffect: 'success', error: null },
    ],

    // 410 → failed immediately, webhook gone, whatever attempts remain
    [
      '410 on the first attempt',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(410, 'http_410'),
      { status: 'failed', cycleAttempts: 1, nextRetryAt: null, webhookEffect: 'gone', error: 'gone' },
    ],
    [
      '410 while retrying',
      { status: 'retrying', cycleAttempts: 4, throttledStreak: 0 },
      attempt(410, 'http_410'),
      { status: 'failed', cycleAttempts: 5, nextRetryAt: null, webhookEffect: 'gone', error: 'gone' },
    ],

    // 429 → stays in flight, attempt not consumed, not failing, waits for Retry-After
    [
      '429 with Retry-After seconds before any failure',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(429, 'http_429', '120'),
      { status: 'pending', cycleAttempts: 0, nextRetryAt: at(120_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 with an HTTP-date Retry-After while retrying',
      { status: 'retrying', cycleAttempts: 2, throttledStreak: 0 },
      attempt(429, 'http_429', 'Thu, 21 Nov 2024 18:10:00 GMT'),
      { status: 'retrying', cycleAttempts: 2, nextRetryAt: at(600_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 with Retry-After over the 1 hour cap',
      { status: 'retrying', cycleAttempts: 1, throttledStreak: 0 },
      attempt(429, 'http_429', '86400'),
      { status: 'retrying', cycleAttempts: 1, nextRetryAt: at(3_600_000), webhookEffect: 'neutral', error: null },
    ],
    // Retry-After never shortens the wait below the next scheduled delay: 0 or a past date does not retry at once.
    [
      '429 with Retry-After 0 waits the next scheduled delay',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(429, 'http_429', '0'),
      { status: 'pending', cycleAttempts: 0, nextRetryAt: at(5_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 with a Retry-After date in the past waits the next scheduled delay',
      { status: 'retrying', cycleAttempts: 3, throttledStreak: 0 },
      attempt(429, 'http_429', 'Thu, 21 Nov 2024 17:00:00 GMT'),
      { status: 'retrying', cycleAttempts: 3, nextRetryAt: at(1_800_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 with a Retry-After shorter than the schedule waits the schedule',
      { status: 'retrying', cycleAttempts: 2, throttledStreak: 0 },
      attempt(429, 'http_429', '1'),
      { status: 'retrying', cycleAttempts: 2, nextRetryAt: at(300_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 on the first attempt without Retry-After waits schedule[1], not 0',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(429, 'http_429'),
      { status: 'pending', cycleAttempts: 0, nextRetryAt: at(5_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 with an invalid Retry-After falls back to the schedule',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(429, 'http_429', 'later'),
      { status: 'pending', cycleAttempts: 0, nextRetryAt: at(5_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 without Retry-After after one failure waits what attempt 2 would',
      { status: 'retrying', cycleAttempts: 1, throttledStreak: 0 },
      attempt(429, 'http_429'),
      { status: 'retrying', cycleAttempts: 1, nextRetryAt: at(5_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 without Retry-After after three failures waits what attempt 4 would',
      { status: 'retrying', cycleAttempts: 3, throttledStreak: 0 },
      attempt(429, 'http_429'),
      { status: 'retrying', cycleAttempts: 3, nextRetryAt: at(1_800_000), webhookEffect: 'neutral', error: null },
    ],
    [
      '429 on the last attempt does not exhaust the delivery',
      { status: 'retrying', cycleAttempts: 7, throttledStreak: 0 },
      attempt(429, 'http_429'),
      { status: 'retrying', cycleAttempts: 7, nextRetryAt: at(36_000_000), webhookEffect: 'neutral', error: null },
    ],

    // other 4xx or 5xx, timeout, connection error, refused redirect → retrying on the schedule
    [
      '500 on the first attempt',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(500, 'http_500'),
      { status: 'retrying', cycleAttempts: 1, nextRetryAt: at(5_000), webhookEffect: 'failure', error: null },
    ],
    [
      '400 on the second attempt',
      { status: 'retrying', cycleAttempts: 1, throttledStreak: 0 },
      attempt(400, 'http_400'),
      { status: 'retrying', cycleAttempts: 2, nextRetryAt: at(300_000), webhookEffect: 'failure', error: null },
    ],
    [
      '404',
      { status: 'retrying', cycleAttempts: 2, throttledStreak: 0 },
      attempt(404, 'http_404'),
      { status: 'retrying', cycleAttempts: 3, nextRetryAt: at(1_800_000), webhookEffect: 'failure', error: null },
    ],
    [
      'timeout',
      { status: 'retrying', cycleAttempts: 3, throttledStreak: 0 },
      attempt(0, 'timeout'),
      { status: 'retrying', cycleAttempts: 4, nextRetryAt: at(7_200_000), webhookEffect: 'failure', error: null },
    ],
    [
      'connection refused',
      { status: 'retrying', cycleAttempts: 4, throttledStreak: 0 },
      attempt(0, 'connection_refused'),
      { status: 'retrying', cycleAttempts: 5, nextRetryAt: at(18_000_000), webhookEffect: 'failure', error: null },
    ],
    [
      'TLS error',
      { status: 'retrying', cycleAttempts: 5, throttledStreak: 0 },
      attempt(0, 'tls_error'),
      { status: 'retrying', cycleAttempts: 6, nextRetryAt: at(36_000_000), webhookEffect: 'failure', error: null },
    ],
    [
      'refused redirect on the seventh attempt',
      { status: 'retrying', cycleAttempts: 6, throttledStreak: 0 },
      attempt(302, 'redirect_refused'),
      { status: 'retrying', cycleAttempts: 7, nextRetryAt: at(36_000_000), webhookEffect: 'failure', error: null },
    ],

    // attempts exhausted
    [
      '503 on the eighth attempt',
      { status: 'retrying', cycleAttempts: 7, throttledStreak: 0 },
      attempt(503, 'http_503'),
      { status: 'failed', cycleAttempts: 8, nextRetryAt: null, webhookEffect: 'failure', error: 'attempts_exhausted' },
    ],
    [
      'blocked address on the eighth attempt',
      { status: 'retrying', cycleAttempts: 7, throttledStreak: 0 },
      attempt(0, 'blocked_address'),
      { status: 'failed', cycleAttempts: 8, nextRetryAt: null, webhookEffect: 'failure', error: 'attempts_exhausted' },
    ],

    // manual retry: a fresh cycle starts at cycleAttempts 0 and behaves like a new delivery
    [
      'first attempt of a manual retry fails',
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(503, 'http_503'),
      { status: 'retrying', cycleAttempts: 1, nextRetryAt: at(5_000), webhookEffect: 'failure', error: null },
    ],
  ])('%s', (_label, state, result, expected) => {
    const throttledStreak = result.statusCode === 429 ? 1 : 0;
    expect(decideNextState(state, result, opts)).toEqual({ ...expected, throttledStreak });
  });
});

describe('decideNextState: the attempt limit', () => {
  /** Runs a sequence of status codes from a fresh delivery and returns every state it passed through. */
  function run(statuses: number[], random: () => number = () => 0.5): NextState[] {
    let state: DeliveryState = { status: 'pending', cycleAttempts: 0, throttledStreak: 0 };
    const seen: NextState[] = [];
    for (const status of statuses) {
      const next = decideNextState(state, attempt(status), { ...opts, random });
      seen.push(next);
      state = next;
    }
    return seen;
  }

  it('fails after exactly 8 counted failures', () => {
    const states = run(Array(8).fill(500));
    expect(states.map((s) => s.status)).toEqual([
      'retrying',
      'retrying',
      'retrying',
      'retrying',
      'retrying',
      'retrying',
      'retrying',
      'failed',
    ]);
    expect(states.map((s) => s.cycleAttempts)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(states.map((s) => s.nextRetryAt && s.nextRetryAt.getTime() - now.getTime())).toEqual([
      5_000,
      300_000,
      1_800_000,
      7_200_000,
      18_000_000,
      36_000_000,
      36_000_000,
      null,
    ]);
    expect(states.at(-1)?.error).toBe('attempts_exhausted');
  });

  it('never counts 429s, wherever they fall among the 8 failures', () => {
    const statuses = [429, 500, 429, 429, 0, 503, 429, 400, 500, 429, 429, 429, 502, 504, 429, 500];
    const states = run(statuses);
    const counted = statuses.filter((s) => s !== 429).length;
    expect(counted).toBe(8);
    expect(states.at(-1)).toMatchObject({ status: 'failed', cycleAttempts: 8, error: 'attempts_exhausted' });
    // Only the last state is final: every 429 left the delivery in flight.
    expect(states.slice(0, -1).every((s) => s.status === 'pending' || s.status === 'retrying')).toBe(true);
    expect(states.filter((s, i) => statuses[i] === 429).every((s) => s.webhookEffect === 'neutral')).toBe(true);
  });

  it('stays pending through 429s until a counted attempt fails', () => {
    const states = run([429, 429, 429, 500, 429]);
    expect(states.map((s) => s.status)).toEqual(['pending', 'pending', 'pending', 'retrying', 'retrying']);
    expect(states.map((s) => s.cycleAttempts)).toEqual([0, 0, 0, 1, 1]);
  });

  it('keeps a delivery in flight through MAX_CONSECUTIVE_THROTTLED 429s in a row', () => {
    expect(MAX_CONSECUTIVE_THROTTLED).toBe(20);
    const states = run(Array(MAX_CONSECUTIVE_THROTTLED).fill(429));
    expect(states.every((s) => s.status === 'pending' && s.cycleAttempts === 0 && s.webhookEffect === 'neutral')).toBe(
      true,
    );
    expect(states.at(-1)?.throttledStreak).toBe(MAX_CONSECUTIVE_THROTTLED);
  });

  it('counts every 429 past the cap as a failed attempt, so an always-429 receiver sees a bounded number of requests', () => {
    const states = run(Array(200).fill(429));
    const final = states.findIndex((s) => s.status === 'failed');
    expect(final + 1).toBe(MAX_CONSECUTIVE_THROTTLED + SCHEDULE.length);
    expect(states[final]).toMatchObject({
      error: 'attempts_exhausted',
      cycleAttempts: SCHEDULE.length,
      webhookEffect: 'failure',
    });
    expect(states[MAX_CONSECUTIVE_THROTTLED]).toMatchObject({
      status: 'retrying',
      cycleAttempts: 1,
      webhookEffect: 'failure',
    });
  });

  it('resets the 429 streak on any other answer', () => {
    const states = run([
      ...Array(MAX_CONSECUTIVE_THROTTLED).fill(429),
      500,
      ...Array(MAX_CONSECUTIVE_THROTTLED).fill(429),
    ]);
    expect(states[MAX_CONSECUTIVE_THROTTLED]?.throttledStreak).toBe(0);
    expect(states.at(-1)).toMatchObject({
      status: 'retrying',
      cycleAttempts: 1,
      webhookEffect: 'neutral',
      throttledStreak: MAX_CONSECUTIVE_THROTTLED,
    });
  });

  it('treats a missing streak as 0 (rows written before the column existed)', () => {
    expect(
      decideNextState({ status: 'pending', cycleAttempts: 0, throttledStreak: 0 }, attempt(429), opts).throttledStreak,
    ).toBe(1);
  });

  it('succeeds on a 2xx after 7 failures and 429s', () => {
    const states = run([500, 429, 500, 500, 500, 429, 500, 500, 500, 200]);
    expect(states.at(-1)).toEqual({
      status: 'succeeded',
      cycleAttempts: 8,
      nextRetryAt: null,
      webhookEffect: 'success',
      throttledStreak: 0,
      error: null,
    });
  });

  it('follows the length of a shortened schedule', () => {
    const short = [0, 1, 1];
    let state: DeliveryState = { status: 'pending', cycleAttempts: 0, throttledStreak: 0 };
    const statuses: string[] = [];
    for (let i = 0; i < 3; i++) {
      state = decideNextState(state, attempt(500), { ...opts, schedule: short });
      statuses.push(state.status);
    }
    expect(statuses).toEqual(['retrying', 'retrying', 'failed']);
  });

  it('fails the next failure and keeps 429s in range when cycleAttempts is already past the limit', () => {
    expect(
      decideNextState({ status: 'retrying', cycleAttempts: 9, throttledStreak: 0 }, attempt(500), opts),
    ).toMatchObject({
      status: 'failed',
      cycleAttempts: 10,
      error: 'attempts_exhausted',
    });
    expect(
      decideNextState({ status: 'retrying', cycleAttempts: 9, throttledStreak: 0 }, attempt(429), opts),
    ).toMatchObject({
      status: 'retrying',
      nextRetryAt: at(36_000_000),
    });
  });
});

describe('decideNextState: jitter', () => {
  it('keeps every scheduled retry within ±20% of its delay', () => {
    const outside: string[] = [];
    for (let cycleAttempts = 0; cycleAttempts < 7; cycleAttempts++) {
      const base = SCHEDULE[cycleAttempts + 1]! * 1000;
      for (let i = 0; i < 500; i++) {
        for (const status of [500, 429]) {
          const next = decideNextState({ status: 'retrying', cycleAttempts, throttledStreak: 0 }, attempt(status), {
            ...opts,
            random: Math.random,
          });
          // A 429 without Retry-After waits for the attempt it blocked; for cycleAttempts 0 that is attempt 2.
          const expectedBase = status === 429 ? SCHEDULE[Math.max(cycleAttempts, 1)]! * 1000 : base;
          const delay = next.nextRetryAt!.getTime() - now.getTime();
          if (delay < Math.floor(expectedBase * 0.8) || delay > Math.ceil(expectedBase * 1.2))
            outside.push(`${status}@${cycleAttempts}: ${delay}`);
        }
      }
    }
    expect(outside).toEqual([]);
  });

  it('does not jitter a Retry-After longer than the scheduled delay', () => {
    for (const r of [0, 0.99]) {
      const next = decideNextState(
        { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
        attempt(429, null, '60'),
        { ...opts, random: () => r },
      );
      expect(next.nextRetryAt).toEqual(at(60_000));
    }
  });

  it('uses the random source it is given', () => {
    const low = decideNextState({ status: 'pending', cycleAttempts: 0, throttledStreak: 0 }, attempt(500), {
      ...opts,
      random: () => 0,
    });
    const high = decideNextState({ status: 'pending', cycleAttempts: 0, throttledStreak: 0 }, attempt(500), {
      ...opts,
      random: () => 0.999_999_999,
    });
    expect(low.nextRetryAt).toEqual(at(4_000));
    expect(high.nextRetryAt).toEqual(at(6_000));
  });

  it('defaults to Math.random', () => {
    const { random: _unused, ...withoutRandom } = opts;
    const delay =
      decideNextState(
        { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
        attempt(500),
        withoutRandom,
      ).nextRetryAt!.getTime() - now.getTime();
    expect(delay).toBeGreaterThanOrEqual(4_000);
    expect(delay).toBeLessThanOrEqual(6_000);
  });
});

describe('decideNextState: proxy_error (CONTRACT 18)', () => {
  it('retries on the schedule and leaves the failure streak alone', () => {
    const first = decideNextState(
      { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
      attempt(0, 'proxy_error'),
      opts,
    );
    expect(first).toMatchObject({
      status: 'retrying',
      cycleAttempts: 1,
      nextRetryAt: at(5_000),
      webhookEffect: 'neutral',
      error: null,
    });
    const last = decideNextState(
      { status: 'retrying', cycleAttempts: 7, throttledStreak: 0 },
      attempt(0, 'proxy_error'),
      opts,
    );
    expect(last).toMatchObject({ status: 'failed', webhookEffect: 'neutral', error: 'attempts_exhausted' });
  });

  it('still blames the endpoint for its own failures', () => {
    expect(
      decideNextState(
        { status: 'pending', cycleAttempts: 0, throttledStreak: 0 },
        attempt(0, 'connection_refused'),
        opts,
      ).webhookEffect,
    ).toBe('failure');
  });
});
