// Values of `datetime` fields (contract §4.3): a string Python 3.12's
// datetime.fromisoformat reads, after `Z` is replaced with `+00:00`, as an
// aware instant with a zero UTC offset. Its grammar: a date (extended
// `YYYY-MM-DD`, basic `YYYYMMDD`, or an ISO week date `YYYY-Www[-D]` /
// `YYYYWww[D]`), any one ASCII character as separator, a time `HH[:MM[:SS]]`
// (or basic `HHMM[SS]`) with an optional fraction of any length after the
// seconds, then `+`/`-` and an offset in the same time forms. Write
// validation, import and the expired scan all read values through here, so
// whatever the server stores an import accepts. Pure: no I/O, no Date.

export const MIN_YEAR = 1;
export const MAX_YEAR = 9999;
const MICROS_PER_SECOND = 1_000_000n;

/** Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeap(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Monday = 0 … Sunday = 6 of a day counted from 1970-01-01 (a Thursday). */
function weekday(days: number): number {
  return (((days + 3) % 7) + 7) % 7;
}

const isDigit = (text: string, at: number): boolean => {
  const code = text.charCodeAt(at);
  return code >= 0x30 && code <= 0x39;
};

/** The number in `text[at, at + width)` when all of it is ASCII digits, else NaN. */
function digits(text: string, at: number, width: number): number {
  if (at + width > text.length) return Number.NaN;
  for (let i = at; i < at + width; i++) if (!isDigit(text, i)) return Number.NaN;
  return Number(text.slice(at, at + width));
}

/** Where the date ends and the one-character separator stands (CPython's _find_isoformat_datetime_separator). */
function separatorIndex(text: string): number | null {
  const length = text.length;
  if (length === 7) return 7;
  if (length < 7) return null;
  if (text[4] === '-') {
    if (text[5] !== 'W') return 10;
    if (length < 8) return null;
    if (length > 8 && text[8] === '-') {
      if (length === 9) return null;
      return length > 10 && isDigit(text, 10) ? 8 : 10;
    }
    return 8;
  }
  if (text[4] !== 'W') return 8;
  let end = 7;
  while (end < length && isDigit(text, end)) end++;
  if (end < 9) return end;
  return end % 2 === 0 ? 7 : 8;
}

/** Days since 1970-01-01 of a date part, or null. */
function parseDate(date: string): number | null {
  const year = digits(date, 0, 4);
  if (Number.isNaN(year)) return null;
  const dashed = date[4] === '-';
  let at = dashed ? 5 : 4;
  if (date[at] === 'W') {
    const week = digits(date, at + 1, 2);
    at += 3;
    let day = 1;
    if (at < date.length) {
      if (dashed && date[at++] !== '-') return null;
      day = digits(date, at, 1);
      at += 1;
    }
    if (Number.isNaN(week) || Number.isNaN(day) || at !== date.length) return null;
    return isoWeekDate(year, week, day);
  }
  const month = digits(date, at, 2);
  at += 2;
  if (dashed && date[at++] !== '-') return null;
  const day = digits(date, at, 2);
  at += 2;
  if (Number.isNaN(month) || Number.isNaN(day) || at !== date.length) return null;
  if (year < MIN_YEAR || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  return daysFromCivil(year, month, day);
}

function isoWeekDate(year: number, week: number, day: number): number | null {
  if (year < MIN_YEAR || year > MAX_YEAR || day < 1 || day > 7) return null;
  const januaryFirst = weekday(daysFromCivil(year, 1, 1));
  // A year has a week 53 when it starts on a Thursday, or on a Wednesday in a leap year.
  const weeks = januaryFirst === 3 || (januaryFirst === 2 && isLeap(year)) ? 53 : 52;
  if (week < 1 || week > weeks) return null;
  const januaryFourth = daysFromCivil(year, 1, 4);
  const days = januaryFourth - weekday(januaryFourth) + (week - 1) * 7 + (day - 1);
  // The last days of 9999's last week fall in year 10000.
  return days >= daysFromCivil(MIN_YEAR, 1, 1) && days < daysFromCivil(MAX_YEAR + 1, 1, 1) ? days : null;
}

interface ClockTime {
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  readonly micros: number;
}

/** `HH[:MM[:SS[.f…]]]` or `HH[MM[SS[.f…]]]`, the whole of `text`; null otherwise. */
function parseClock(text: string): ClockTime | null {
  const parts = [0, 0, 0];
  let at = 0;
  let colons = false;
  let component = 0;
  for (; component < 3; component++) {
    const value = digits(text, at, 2);
    if (Number.isNaN(value)) return null;
    parts[component] = value;
    at += 2;
    if (at === text.length) return { hour: parts[0] as number, minute: parts[1] as number, second: parts[2] as number, micros: 0 };
    if (component === 0) colons = text[at] === ':';
    if (component === 2) break;
    if (colons) {
      if (text[at] !== ':') return null;
      at += 1;
    }
  }
  // Only a fraction may follow the seconds: `.` or `,`, then digits (beyond six ignored).
  if (text[at] !== '.' && text[at] !== ',') return null;
  const fraction = text.slice(at + 1);
  if (fraction.length === 0 || !/^[0-9]+$/.test(fraction)) return null;
  const micros = Number(fraction.slice(0, 6).padEnd(6, '0'));
  return { hour: parts[0] as number, minute: parts[1] as number, second: parts[2] as number, micros };
}

/**
 * Microseconds since the epoch of a zero-offset datetime value, or null when
 * the text is not one (malformed, naive, a non-zero offset, or a calendar
 * instant that does not exist).
 */
export function zeroOffsetInstantMicros(value: string): bigint | null {
  const text = value.replaceAll('Z', '+00:00');
  const separator = separatorIndex(text);
  // Without a time (or with a separator but nothing after it) the value is naive.
  if (separator === null || separator + 1 >= text.length || text.charCodeAt(separator) > 0x7f) return null;
  const days = parseDate(text.slice(0, separator));
  if (days === null) return null;
  const rest = text.slice(separator + 1);
  let sign = -1;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '+' || rest[i] === '-') {
      sign = i;
      break;
    }
  }
  if (sign < 0) return null;
  const clock = parseClock(rest.slice(0, sign));
  const offset = parseClock(rest.slice(sign + 1));
  if (clock === null || offset === null) return null;
  if (offset.hour !== 0 || offset.minute !== 0 || offset.second !== 0 || offset.micros !== 0) return null;
  if (clock.hour > 23 || clock.minute > 59 || clock.second > 59) return null;
  const seconds = BigInt(days) * 86_400n + BigInt(clock.hour * 3600 + clock.minute * 60 + clock.second);
  return seconds * MICROS_PER_SECOND + BigInt(clock.micros);
}

export function isZeroOffsetDatetime(value: string): boolean {
  return zeroOffsetInstantMicros(value) !== null;
}
