// Timestamp27 (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, UTC, six fraction digits) to and
// from microseconds since the Unix epoch, the unit storage ports use. Strict
// both ways: only real calendar instants in years 0001..9999 exist here.

import { daysFromCivil } from '../contract/iso-datetime.js';

const PATTERN = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})Z$/;

const MICROS_PER_DAY = 86_400_000_000n;
// Days from 1970-01-01 to 0001-01-01 and to 10000-01-01 (proleptic Gregorian).
const MIN_DAY = -719_162;
const END_DAY = 2_932_897;
export const MIN_TIMESTAMP27_MICROS = BigInt(MIN_DAY) * MICROS_PER_DAY;
export const MAX_TIMESTAMP27_MICROS = BigInt(END_DAY) * MICROS_PER_DAY - 1n;

// Howard Hinnant's civil_from_days: exact integer arithmetic, independent of
// Date's two-digit-year quirks (days_from_civil lives beside the datetime rules).
function civilFromDays(days: number): [number, number, number] {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (month <= 2 ? 1 : 0), month, day];
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

// Consecutive timestamps of an artefact mostly share their date: the day
// number of the last date seen is kept.
let lastDate = '';
let lastDays = 0;

/** Microseconds of a Timestamp27 text, or undefined when the text is not one. */
export function parseTimestamp27(text: string): bigint | undefined {
  if (text.length !== 27 || !PATTERN.test(text)) return undefined;
  const date = text.slice(0, 10);
  let days = lastDays;
  if (date !== lastDate) {
    const year = Number(text.slice(0, 4));
    const month = Number(text.slice(5, 7));
    const day = Number(text.slice(8, 10));
    if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
    days = daysFromCivil(year, month, day);
    lastDate = date;
    lastDays = days;
  }
  const hour = Number(text.slice(11, 13));
  const minute = Number(text.slice(14, 16));
  const second = Number(text.slice(17, 19));
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  // Whole seconds stay below 2^53, so the sum is exact before widening.
  return BigInt(days * 86_400 + hour * 3600 + minute * 60 + second) * 1_000_000n + BigInt(Number(text.slice(20, 26)));
}

const pad = (value: number, width: number): string => String(value).padStart(width, '0');
const TWO_DIGITS = Array.from({ length: 100 }, (_, value) => pad(value, 2));

// The same for formatting: the `YYYY-MM-DDT` text of the last day formatted.
let formattedDay = Number.NaN;
let formattedDate = '';

/** Timestamp27 text of an instant, or undefined outside years 0001..9999. */
export function formatTimestamp27(micros: bigint): string | undefined {
  if (micros < MIN_TIMESTAMP27_MICROS || micros > MAX_TIMESTAMP27_MICROS) return undefined;
  let days = micros / MICROS_PER_DAY;
  let rest = micros % MICROS_PER_DAY;
  if (rest < 0n) {
    rest += MICROS_PER_DAY;
    days -= 1n;
  }
  const day = Number(days);
  if (day !== formattedDay) {
    const [year, month, dayOfMonth] = civilFromDays(day);
    formattedDate = `${pad(year, 4)}-${TWO_DIGITS[month] as string}-${TWO_DIGITS[dayOfMonth] as string}T`;
    formattedDay = day;
  }
  // Microseconds of a day stay below 2^37: exact as a number.
  const microsOfDay = Number(rest);
  const secondsOfDay = Math.floor(microsOfDay / 1_000_000);
  const fraction = microsOfDay - secondsOfDay * 1_000_000;
  const hour = Math.floor(secondsOfDay / 3600);
  const minute = Math.floor((secondsOfDay % 3600) / 60);
  const second = secondsOfDay % 60;
  return `${formattedDate}${TWO_DIGITS[hour] as string}:${TWO_DIGITS[minute] as string}:${TWO_DIGITS[second] as string}.${pad(fraction, 6)}Z`;
}
