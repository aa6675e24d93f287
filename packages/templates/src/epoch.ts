// `epoch`: an ISO 8601 timestamp (the event's created_at) as fractional Unix seconds. The value is
// seconds + nanoseconds/1e9 in float64, printed in Go's shortest fixed notation, so receivers that want
// a number (Splunk's `time`, for instance) get `1732212345.123`. The Go fixture generator computes it with
// the same float operations, so both agree to the last digit.

import { FuncError } from './errors';
import { formatFloat } from './strconv';

const iso = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|([+-])(\d{2}):(\d{2}))$/;

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

const monthDays = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(yIn: number, m: number, d: number): number {
  const y = m <= 2 ? yIn - 1 : yIn;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Fractional Unix seconds of an ISO 8601 timestamp (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`). */
export function epoch(s: string): string {
  const m = iso.exec(s);
  // The input is event or variable data: the message describes the expected form, never the value.
  const bad = (): never => {
    throw new FuncError('not an ISO 8601 timestamp (expected YYYY-MM-DDTHH:MM:SS[.fraction] and Z or ±HH:MM)');
  };
  if (!m) return bad();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) bad();
  const dim = month === 2 && isLeap(year) ? 29 : (monthDays[month - 1] ?? 0);
  if (day < 1 || day > dim) bad();
  let offset = 0;
  if (m[8] !== 'Z') {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) bad();
    offset = (m[9] === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
  const nanos = Number((m[7] ?? '').padEnd(9, '0'));
  return formatFloat(seconds + nanos / 1e9, 'f', -1);
}
