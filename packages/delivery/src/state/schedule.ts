/** Share of each retry delay that jitter may add or remove (SPEC 6.6: plus or minus 20%). */
export const RETRY_JITTER = 0.2;

/**
 * Milliseconds to wait before attempt `attemptNumber` (1-based) of a cycle: `schedule[attemptNumber - 1]`
 * seconds with uniform ±20% jitter, so that receivers recovering from an outage are not hit by every
 * delivery at the same instant. A zero delay stays exactly zero (the first attempt is immediate).
 * `random` must return values in [0, 1), like Math.random; the result lies in [0.8·d, 1.2·d], rounded to whole ms.
 * Throws RangeError when attemptNumber is not an integer within 1..schedule.length.
 */
export function retryDelayMs(
  schedule: readonly number[],
  attemptNumber: number,
  random: () => number = Math.random,
): number {
  if (!Number.isInteger(attemptNumber) || attemptNumber < 1 || attemptNumber > schedule.length) {
    throw new RangeError(`attempt ${attemptNumber} is outside the retry schedule of ${schedule.length} attempts`);
  }
  const baseMs = (schedule[attemptNumber - 1] ?? 0) * 1000;
  if (baseMs <= 0) return 0;
  // Clamped so that a misbehaving random source can never push the delay outside the documented band.
  const drawn = random();
  const r = Number.isFinite(drawn) ? Math.min(Math.max(drawn, 0), 1) : 0.5;
  const factor = 1 - RETRY_JITTER + 2 * RETRY_JITTER * r;
  return Math.round(baseMs * factor);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const SHORT_DAYS = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAYS = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

// The three forms RFC 9110 section 5.6.7 obliges recipients to accept. Date.parse is not used: it accepts
// almost anything ("2024", "tomorrow" in some engines) and would turn garbage into a delay.
const IMF_FIXDATE = new RegExp(`^${SHORT_DAYS}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_DAYS}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${SHORT_DAYS} ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

function utc(year: number, month: string, day: number, hour: number, minute: number, second: number): number | null {
  const monthIndex = MONTHS.indexOf(month);
  // Second 60 is allowed for leap seconds and lands on the next minute, which is what a receiver meant.
  if (hour > 23 || minute > 59 || second > 60 || day < 1) return null;
  const ms = Date.UTC(year, monthIndex, day, hour, minute, second);
  // Date.UTC rolls 31 Feb over into March; a date that moved is not a real date.
  const check = new Date(Date.UTC(year, monthIndex, day));
  if (check.getUTCMonth() !== monthIndex || check.getUTCDate() !== day) return null;
  return ms;
}

function parseHttpDate(value: string, now: Date): number | null {
  let m = IMF_FIXDATE.exec(value);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = RFC850_DATE.exec(value);
  if (m) {
    // RFC 9110: a two-digit year more than 50 years in the future means the most recent past year ending in those digits.
    const twoDigits = Number(m[3]);
    const currentYear = now.getUTCFullYear();
    let year = currentYear - (currentYear % 100) + twoDigits;
    if (year > currentYear + 50) year -= 100;
    return utc(year, m[2]!, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  }
  m = ASCTIME_DATE.exec(value);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), Number(m[3]), Number(m[4]), Number(m[5]));
  return null;
}

/**
 * Delay in milliseconds that a 429's Retry-After asks for, clamped to [0, capSeconds·1000]; null when the header
 * is absent or is neither delay-seconds (a non-negative integer) nor an HTTP-date. A date in the past gives 0.
 * The cap keeps a receiver from parking a delivery indefinitely (SPEC 6.6: capped at 1 hour).
 */
export function parseRetryAfter(value: string | null | undefined, now: Date, capSeconds: number): number | null {
  if (value === null || value === undefined) return null;
  const trimmed = value.trim();
  if (trimmed === '') return null;
  const capMs = Math.max(0, capSeconds) * 1000;
  let delayMs: number;
  if (/^\d+$/.test(trimmed)) {
    // Digits beyond Number's precision still mean "a very long time", which the cap handles.
    delayMs = Number(trimmed) * 1000;
  } else {
    const at = parseHttpDate(trimmed, now);
    if (at === null) return null;
    delayMs = at - now.getTime();
  }
  return Math.min(Math.max(delayMs, 0), capMs);
}
