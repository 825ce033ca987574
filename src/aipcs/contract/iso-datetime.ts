// Values of `datetime` fields (contract §4.3): a string Python 3.12's
// datetime.fromisoformat reads, after `Z` is replaced with `+00:00`, as an
// aware instant with a zero UTC offset. The reference runs CPython's C
// parser, which reads the UTF-8 bytes more loosely than its documentation:
// a date (`YYYY-MM-DD`, `YYYYMMDD`, `YYYY-Www[-D]`, `YYYYWww[D]`), any one
// character as separator (non-ASCII too), then a time of up to three
// two-digit components, `:`-separated or not, where a `.`/`,` fraction may
// follow any component and one stray character may end it when an offset
// follows; the offset (after the first `+` or `-`) is read the same way and
// counts as zero when its hours, minutes and seconds are (its fraction is
// dropped). This module reproduces that reading, checked against Python 3.12
// (test/aipcs/contract/iso-datetime.test.ts). Write validation, import and
// the expired scan all read values through here, so whatever the server
// stores an import accepts. Pure: no I/O, no Date.

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

const PLUS = 0x2b;
const MINUS = 0x2d;
const COLON = 0x3a;
const DOT = 0x2e;
const COMMA = 0x2c;
const LETTER_W = 0x57;

const UTF8 = new TextEncoder();

/**
 * The UTF-8 bytes the reference's parser reads, or null for text it cannot
 * encode (a lone surrogate; the request layer refuses those anyway) or that
 * holds U+0000 (which no record string may hold).
 */
function utf8Bytes(text: string): Uint8Array | null {
  return text.isWellFormed() && !text.includes('\u0000') ? UTF8.encode(text) : null;
}

/** Characters (code points) in UTF-8 bytes: every byte that does not continue a sequence starts one. */
function codePoints(bytes: Uint8Array): number {
  let count = 0;
  for (const byte of bytes) if ((byte & 0xc0) !== 0x80) count++;
  return count;
}

/** A byte reader that yields 0 past the end, as the C parser sees its terminator. */
class Bytes {
  constructor(readonly data: Uint8Array) {}
  get length(): number {
    return this.data.length;
  }
  at(index: number): number {
    return index < this.data.length ? (this.data[index] as number) : 0;
  }
  isDigit(index: number): boolean {
    const byte = this.at(index);
    return byte >= 0x30 && byte <= 0x39;
  }
  /** The number in the `width` bytes from `at` when all are ASCII digits, else NaN. */
  digits(at: number, width: number): number {
    let value = 0;
    for (let i = at; i < at + width; i++) {
      if (!this.isDigit(i)) return Number.NaN;
      value = value * 10 + (this.at(i) - 0x30);
    }
    return value;
  }
}

/** Where the date ends and the separator stands; -1 when no layout fits. */
function separatorIndex(text: Bytes): number {
  const length = text.length;
  if (length === 7) return 7;
  if (text.at(4) === MINUS) {
    if (text.at(5) !== LETTER_W) return 10;
    if (length > 8 && text.at(8) === MINUS) {
      if (length === 9) return -1;
      // YYYY-Www-D or YYYY-Www then a `-` separator: a digit at 10 means the latter.
      return length > 10 && text.isDigit(10) ? 8 : 10;
    }
    return 8;
  }
  if (text.at(4) !== LETTER_W) return 8;
  // YYYYWww or YYYYWwwD: time components come in pairs, so count the digits.
  let end = 7;
  while (end < length && text.isDigit(end)) end++;
  if (end < 9) return end;
  return end % 2 === 0 ? 7 : 8;
}

/** Days since 1970-01-01 of the date before `separator`, or null. */
function parseDate(text: Bytes, separator: number): number | null {
  const year = text.digits(0, 4);
  if (Number.isNaN(year)) return null;
  const dashed = text.at(4) === MINUS;
  let at = dashed ? 5 : 4;
  if (text.at(at) === LETTER_W) {
    const week = text.digits(at + 1, 2);
    if (Number.isNaN(week)) return null;
    at += 3;
    let day = 1;
    if (at < separator) {
      if (dashed && text.at(at++) !== MINUS) return null;
      day = text.digits(at, 1);
      if (Number.isNaN(day)) return null;
    }
    return isoWeekDate(year, week, day);
  }
  const month = text.digits(at, 2);
  at += 2;
  if (dashed && text.at(at++) !== MINUS) return null;
  const day = text.digits(at, 2);
  if (Number.isNaN(month) || Number.isNaN(day)) return null;
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
  /** Whether anything but the end of the whole text follows what was read. */
  readonly trailing: boolean;
}

/**
 * Reads `HH[:?MM[:?SS]][(.|,)f…]` from `start` up to `end` the way the
 * reference's parser does; null when it fails. A component is exactly two
 * digits; the separator style is fixed by the first; a fraction may follow any
 * component (digits beyond six are dropped); when the bytes run out right
 * after a component, its following byte (whatever it is) ends the read.
 */
function readClock(text: Bytes, start: number, end: number): ClockTime | null {
  const parts = [0, 0, 0];
  let at = start;
  let colons = true;
  let component = 0;
  for (; component < 3; component++) {
    const value = text.digits(at, 2);
    if (Number.isNaN(value)) return null;
    parts[component] = value;
    at += 2;
    const next = text.at(at);
    at += 1;
    if (component === 0) colons = next === COLON;
    const clock = { hour: parts[0] as number, minute: parts[1] as number, second: parts[2] as number, micros: 0 };
    if (at >= end) return { ...clock, trailing: next !== 0 };
    if (colons && next === COLON) continue;
    if (next === DOT || next === COMMA) break;
    if (colons) return null;
    at -= 1;
  }
  const width = Math.min(end - at, 6);
  const fraction = text.digits(at, width);
  if (Number.isNaN(fraction)) return null;
  at += width;
  while (text.isDigit(at)) at++;
  return { hour: parts[0] as number, minute: parts[1] as number, second: parts[2] as number, micros: fraction * 10 ** (6 - width), trailing: text.at(at) !== 0 };
}

/**
 * Microseconds since the epoch of a zero-offset datetime value, or null when
 * the text is not one (malformed, naive, a non-zero offset, or a calendar
 * instant that does not exist).
 */
export function zeroOffsetInstantMicros(value: string): bigint | null {
  const replaced = value.replaceAll('Z', '+00:00');
  const encoded = utf8Bytes(replaced);
  // The reference refuses fewer than seven characters (code points) outright.
  if (encoded === null || codePoints(encoded) < 7) return null;
  const text = new Bytes(encoded);
  const separator = separatorIndex(text);
  if (separator < 0) return null;
  const days = parseDate(text, separator);
  // Without a time the value is naive.
  if (days === null || text.length <= separator) return null;
  // The separator is one whole character, however many bytes it takes.
  const lead = text.at(separator);
  const start = separator + (lead < 0x80 ? 1 : (lead & 0xf0) === 0xe0 ? 3 : (lead & 0xf0) === 0xf0 ? 4 : 2);
  if (start >= text.length) return null;
  let sign = start;
  while (sign < text.length && text.at(sign) !== PLUS && text.at(sign) !== MINUS) sign++;
  // Without an offset the value is naive (or malformed).
  if (sign === text.length) return null;
  const clock = readClock(text, start, sign);
  const offset = readClock(text, sign + 1, text.length);
  if (clock === null || offset === null || offset.trailing) return null;
  // An offset of zero hours, minutes and seconds is UTC, its fraction ignored.
  if (offset.hour !== 0 || offset.minute !== 0 || offset.second !== 0) return null;
  if (clock.hour > 23 || clock.minute > 59 || clock.second > 59) return null;
  const seconds = BigInt(days) * 86_400n + BigInt(clock.hour * 3600 + clock.minute * 60 + clock.second);
  return seconds * MICROS_PER_SECOND + BigInt(clock.micros);
}

export function isZeroOffsetDatetime(value: string): boolean {
  return zeroOffsetInstantMicros(value) !== null;
}
