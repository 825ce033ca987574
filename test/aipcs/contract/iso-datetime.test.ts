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
    '2030-01-01T00:00:00+00:00:00.000001',
    '2030-01-01T00:00:00z', // a lowercase z is not replaced, and not an offset
    '2030-01-01T00:00:00+00:00Z',
    '2030-01-01é00:00:00Z', // a non-ASCII separator
    '2030-0101T00:00:00Z', // mixed basic and extended date
    '203001-01T00:00:00Z',
    '2030-01-01T00:0000Z', // mixed basic and extended time
    '2030-01-01T0000:00Z',
    '2030-01-01T00:00.5Z', // a fraction only after seconds
    '2030-01-01T00:00:00.Z',
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
});
