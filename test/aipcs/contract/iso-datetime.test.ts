// Datetime field values (contract §4.3): what Python 3.12's
// datetime.fromisoformat reads after `Z` becomes `+00:00`, with a zero offset.
// The instants are checked against Date where Date is exact.

import { describe, expect, it } from 'vitest';
import { isZeroOffsetDatetime, zeroOffsetInstantMicros } from '../../../src/aipcs/contract/iso-datetime.js';

const micros = (iso: string, extra = 0n): bigint => BigInt(Date.parse(iso)) * 1000n + extra;

describe('zero-offset datetimes', () => {
  it.each([
    ['2030-01-01T00:00:00Z', micros('2030-01-01T00:00:00Z')],
    ['2030-01-01t00:00:00Z', micros('2030-01-01T00:00:00Z')], // RFC 3339 allows a lowercase t
    ['2030-01-01 00:00:00Z', micros('2030-01-01T00:00:00Z')],
    ['2030-01-01x12:30:00+00:00', micros('2030-01-01T12:30:00Z')], // any one ASCII separator
    ['2030-01-01T00:00Z', micros('2030-01-01T00:00:00Z')],
    ['2030-01-01T07Z', micros('2030-01-01T07:00:00Z')],
    ['20300101T000000Z', micros('2030-01-01T00:00:00Z')],
    ['20300101T1230Z', micros('2030-01-01T12:30:00Z')],
    ['2030-01-01T00:00:00.123456789Z', micros('2030-01-01T00:00:00Z', 123_456n)],
    ['2030-01-01T00:00:00,5Z', micros('2030-01-01T00:00:00Z', 500_000n)],
    ['2030-01-01T00:00:00-00:00', micros('2030-01-01T00:00:00Z')],
    ['2030-01-01T00:00:00+0000', micros('2030-01-01T00:00:00Z')],
    ['2030-01-01T00:00:00+00', micros('2030-01-01T00:00:00Z')],
    ['2030-01-01T00:00:00+00:00:00.000000', micros('2030-01-01T00:00:00Z')],
    ['2011-W01-2T00:05:23Z', micros('2011-01-04T00:05:23Z')], // ISO week dates
    ['2011W012T00:05:23Z', micros('2011-01-04T00:05:23Z')],
    ['2011-W01T00:00Z', micros('2011-01-03T00:00:00Z')],
    ['2020-W53-7T00:00Z', micros('2021-01-03T00:00:00Z')],
    ['2024-02-29T23:59:59Z', micros('2024-02-29T23:59:59Z')],
    ['0001-01-01T00:00:00Z', -62_135_596_800_000_000n],
  ])('accepts %s', (text, expected) => {
    expect(zeroOffsetInstantMicros(text)).toBe(expected);
  });

  it.each([
    '2030-01-01', // date only: naive
    '2030-01-01T00:00:00', // naive
    '2030-01-01T',
    '2030-01-01T00:00:00+01:00', // non-zero offsets
    '2030-01-01T00:00:00-00:01',
    '2030-01-01T00:00:00z', // a lowercase z is not replaced, and not an offset
    '2030-01-01T00:00:00+00:00Z',
    '2030-0101T00:00:00Z', // mixed basic and extended date
    '203001-01T00:00:00Z',
    '2030-01-01T00:0000Z', // mixed basic and extended time
    '2030-01-01T0000:00Z',
    '2030-01-01T00:00:00.12a4Z',
    '2030-01-01T24:00:00Z',
    '2030-01-01T00:60:00Z',
    '2030-01-01T00:00:60Z',
    '2023-02-29T00:00:00Z',
    '2030-13-01T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '2030-1-01T00:00:00Z',
    '2021-W53-1T00:00Z', // 2021 has 52 ISO weeks
    '2011-W01-8T00:00Z',
    '2011-W00-1T00:00Z',
    '9999-W52-6T00:00Z', // falls in year 10000
    '2030-01-01T00:00:00+0000:00',
    '',
  ])('refuses %s', (text) => {
    expect(isZeroOffsetDatetime(text)).toBe(false);
  });

  // CPython's C parser (what the reference runs) reads more than its
  // documentation says; these instants and refusals are Python 3.12's own
  // (`datetime.fromisoformat(text.replace('Z', '+00:00'))`, zero offset).
  it.each([
    ['2030-01-01T00:00:00+00:00:00.000001', 1_893_456_000_000_000n], // an offset's fraction is dropped
    ['2030-01-01T00:00:00-00:00:00.999999', 1_893_456_000_000_000n],
    ['2030-01-01\u00e900:00:00Z', 1_893_456_000_000_000n], // any one character separates, non-ASCII too
    ['2030-01-01T00:00.5Z', 1_893_456_000_500_000n], // a fraction may follow any component
    ['2030-01-01T12.5Z', 1_893_499_200_500_000n],
    ['2030-01-01T1230,25Z', 1_893_501_000_250_000n],
    ['2030-01-01T12:00:00:5Z', 1_893_499_200_500_000n],
    ['2030-01-01T12000012Z', 1_893_499_200_120_000n],
    ['2030-01-01T00:00:00.Z', 1_893_456_000_000_000n], // one stray byte may end the time before an offset
    ['2030-01-01T12:00xZ', 1_893_499_200_000_000n],
    ['2030-01-01T1200x+00:00', 1_893_499_200_000_000n],
    ['2030-01-01T12:00:00.1234567xZ', 1_893_499_200_123_456n],
    ['2030-01-01T12-00:00', 1_893_499_200_000_000n], // the first + or - starts the offset
    ['0001-01-010000+00', -62_135_596_800_000_000n], // the separator may be a digit
    ['2030-W01-1-12:00Z', 1_893_412_800_000_000n],
    ['2030W01112Z', 1_893_412_800_000_000n],
    ['2030-01-01\u{1f600}T12:00Z', null], // a separator is one whole character
    ['2030-01-01T12:00\u00e9+00:00', null], // a stray multi-byte character is more than one byte
    ['2030-01-01T12:00:00.12xZ', null],
    ['2030-01-01T1.5Z', null],
    ['2030-01-01T12:3Z', null],
    ['2030-01-01T12:00:00+00:0', null],
    ['2030-01-01T12:00:00+00x', null],
    ['2030-01-01T00:00:00+00:00:01', null],
    ['2030-01-01T12:00:00.', null],
    ['2030-01-01T12:00x', null],
    ['0000-W01-1T00:00Z', null],
    ['2030-W01-112:00Z', null],
    ['2030W0112Z', null],
    ['2030-01-01T12:00:00\u3000Z', null],
  ])('reads %s as Python 3.12 does', (text, expected) => {
    expect(zeroOffsetInstantMicros(text)).toBe(expected);
  });
});
