import { parseRetryAfter, retryDelayMs } from '@gatehook/delivery/state/schedule';

const SCHEDULE = [0, 5, 300, 1800, 7200, 18000, 36000, 36000] as const;

/** A small seeded generator, so that a failing property run can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('retryDelayMs', () => {
  it('keeps the first attempt immediate whatever the random source says', () => {
    for (const r of [0, 0.5, 0.999999]) expect(retryDelayMs(SCHEDULE, 1, () => r)).toBe(0);
  });

  it.each([
    [2, 5_000],
    [3, 300_000],
    [4, 1_800_000],
    [5, 7_200_000],
    [6, 18_000_000],
    [7, 36_000_000],
    [8, 36_000_000],
  ])('attempt %i waits %i ms at the centre of the jitter band', (attempt, ms) => {
    expect(retryDelayMs(SCHEDULE, attempt, () => 0.5)).toBe(ms);
  });

  it('reaches both edges of the ±20% band', () => {
    expect(retryDelayMs(SCHEDULE, 2, () => 0)).toBe(4_000);
    expect(retryDelayMs(SCHEDULE, 2, () => 0.999_999_999)).toBe(6_000);
    expect(retryDelayMs(SCHEDULE, 8, () => 0)).toBe(28_800_000);
    expect(retryDelayMs(SCHEDULE, 8, () => 0.999_999_999)).toBe(43_200_000);
  });

  it('stays within ±20% for many random draws on every attempt (seeded)', () => {
    const random = seeded(20241121);
    for (let attempt = 2; attempt <= SCHEDULE.length; attempt++) {
      const base = SCHEDULE[attempt - 1]! * 1000;
      const delays = Array.from({ length: 5_000 }, () => retryDelayMs(SCHEDULE, attempt, random));
      expect(delays.filter((d) => !Number.isInteger(d))).toEqual([]);
      const lowest = Math.min(...delays);
      const highest = Math.max(...delays);
      expect(lowest).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
      expect(highest).toBeLessThanOrEqual(Math.ceil(base * 1.2));
      // Jitter is spread over the band, not stuck near the centre.
      expect(lowest).toBeLessThan(base * 0.82);
      expect(highest).toBeGreaterThan(base * 1.18);
    }
  });

  it('stays within ±20% with Math.random, for fractional and tiny schedules too', () => {
    const schedules = [SCHEDULE, [0, 0.5, 1, 1, 1, 1, 1, 1], [0.001, 0.003, 2.5, 10, 60, 0, 7, 1e6]];
    for (const schedule of schedules) {
      for (let attempt = 1; attempt <= schedule.length; attempt++) {
        const base = schedule[attempt - 1]! * 1000;
        const delays = Array.from({ length: 1_000 }, () => retryDelayMs(schedule, attempt));
        const outside = delays.filter((d) => d < Math.floor(base * 0.8) || d > Math.ceil(base * 1.2));
        expect({ attempt, outside }).toEqual({ attempt, outside: [] });
      }
    }
  });

  it('is roughly uniform: the mean of many draws is near the base delay', () => {
    const random = seeded(7);
    let sum = 0;
    const n = 20_000;
    for (let i = 0; i < n; i++) sum += retryDelayMs(SCHEDULE, 3, random);
    expect(Math.abs(sum / n - 300_000)).toBeLessThan(300_000 * 0.01);
  });

  it('keeps a misbehaving random source inside the band', () => {
    expect(retryDelayMs(SCHEDULE, 2, () => -3)).toBe(4_000);
    expect(retryDelayMs(SCHEDULE, 2, () => 7)).toBe(6_000);
    expect(retryDelayMs(SCHEDULE, 2, () => Number.NaN)).toBe(5_000);
  });

  it.each([0, 9, -1, 1.5, Number.NaN])('throws RangeError for attempt %p', (attempt) => {
    expect(() => retryDelayMs(SCHEDULE, attempt)).toThrow(RangeError);
  });

  it('follows the length of the schedule it is given', () => {
    expect(retryDelayMs([0, 1, 1], 3, () => 0.5)).toBe(1_000);
    expect(() => retryDelayMs([0, 1, 1], 4)).toThrow(RangeError);
    expect(() => retryDelayMs([], 1)).toThrow(RangeError);
  });
});

describe('parseRetryAfter', () => {
  const now = new Date('2024-11-21T18:00:00.000Z');
  const cap = 3600;

  it.each<[string | null | undefined, number | null]>([
    [null, null],
    [undefined, null],
    ['', null],
    ['   ', null],
    ['0', 0],
    ['1', 1_000],
    ['120', 120_000],
    [' 30 ', 30_000],
    ['3600', 3_600_000],
    ['3601', 3_600_000],
    ['86400', 3_600_000],
    ['99999999999999999999999', 3_600_000],
    ['-5', null],
    ['+5', null],
    ['1.5', null],
    ['1e3', null],
    ['5s', null],
    ['0x10', null],
    ['soon', null],
  ])('delay-seconds %p → %p', (value, expected) => {
    expect(parseRetryAfter(value, now, cap)).toBe(expected);
  });

  it.each<[string, number | null]>([
    // IMF-fixdate, the preferred form
    ['Thu, 21 Nov 2024 18:02:00 GMT', 120_000],
    ['Thu, 21 Nov 2024 18:00:00 GMT', 0],
    ['Thu, 21 Nov 2024 17:00:00 GMT', 0],
    ['Fri, 22 Nov 2024 18:00:00 GMT', 3_600_000],
    ['Thu, 21 Nov 2024 18:59:59 GMT', 3_599_000],
    // Obsolete forms that RFC 9110 still requires recipients to accept
    ['Thursday, 21-Nov-24 18:00:30 GMT', 30_000],
    ['Thu Nov 21 18:00:45 2024', 45_000],
    ['Thu Nov  1 18:00:45 2024', 0],
    // Malformed dates
    ['Thu, 31 Feb 2024 18:00:00 GMT', null],
    ['Thu, 21 Nov 2024 24:00:00 GMT', null],
    ['Thu, 21 Nov 2024 18:60:00 GMT', null],
    ['Thu, 21 Nov 2024 18:02:00 UTC', null],
    ['Thu, 21 Nov 2024 18:02:00', null],
    ['21 Nov 2024 18:02:00 GMT', null],
    ['Thu, 21 November 2024 18:02:00 GMT', null],
    ['2024-11-21T18:02:00Z', null],
    ['2024-11-21', null],
    ['Thu, 00 Nov 2024 18:02:00 GMT', null],
  ])('HTTP-date %p → %p', (value, expected) => {
    expect(parseRetryAfter(value, now, cap)).toBe(expected);
  });

  it('reads a two-digit RFC 850 year as the nearest year not more than 50 years ahead', () => {
    // 74 would be 2074, 50 years ahead of 2024 at most, so it stays in this century: far future, capped.
    expect(parseRetryAfter('Sunday, 21-Nov-74 18:00:00 GMT', now, cap)).toBe(3_600_000);
    // 75 would be 2075, more than 50 years ahead, so it means 1975: in the past.
    expect(parseRetryAfter('Friday, 21-Nov-75 18:00:00 GMT', now, cap)).toBe(0);
  });

  it('applies the cap it is given', () => {
    expect(parseRetryAfter('120', now, 60)).toBe(60_000);
    expect(parseRetryAfter('Thu, 21 Nov 2024 18:02:00 GMT', now, 60)).toBe(60_000);
    expect(parseRetryAfter('120', now, 0)).toBe(0);
  });

  it('never leaves [0, cap] for many random delay-seconds (seeded)', () => {
    const random = seeded(99);
    const wrong: number[] = [];
    for (let i = 0; i < 5_000; i++) {
      const seconds = Math.floor(random() * 10_000);
      if (parseRetryAfter(String(seconds), now, cap) !== Math.min(seconds, cap) * 1000) wrong.push(seconds);
    }
    expect(wrong).toEqual([]);
  });
});
