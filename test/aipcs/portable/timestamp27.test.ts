// Timestamp27 (`YYYY-MM-DDTHH:MM:SS.ffffffZ`) to microseconds and back:
// exact, strict, and over the whole range of years 0001..9999.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatTimestamp27, parseTimestamp27 } from '../../../src/aipcs/portable/index.js';
import { MAX_TIMESTAMP27_MICROS, MIN_TIMESTAMP27_MICROS } from '../../../src/aipcs/portable/timestamp27.js';

describe('Timestamp27', () => {
  it('agrees with Date where Date is exact', () => {
    expect(parseTimestamp27('1970-01-01T00:00:00.000000Z')).toBe(0n);
    expect(parseTimestamp27('2026-01-02T03:04:05.000006Z')).toBe(BigInt(Date.UTC(2026, 0, 2, 3, 4, 5)) * 1000n + 6n);
    expect(parseTimestamp27('1969-12-31T23:59:59.999999Z')).toBe(-1n);
    expect(parseTimestamp27('2024-02-29T12:00:00.000000Z')).toBe(BigInt(Date.UTC(2024, 1, 29, 12)) * 1000n);
  });

  it('knows the Gregorian leap years and month lengths, both ways', () => {
    // The last day of a 400-year cycle (the leap day of a year divisible by 400) and the days around it.
    for (const text of [
      '1600-02-29T00:00:00.000000Z',
      '2000-02-29T23:59:59.999999Z',
      '2000-03-01T00:00:00.000000Z',
      '2400-02-29T12:00:00.000000Z',
      '2000-02-28T00:00:00.000000Z',
      '2100-03-01T00:00:00.000000Z',
      '1999-12-31T00:00:00.000000Z',
      '2000-12-31T00:00:00.000000Z',
      '2026-11-30T00:00:00.000000Z',
      '2026-12-31T00:00:00.000000Z',
    ]) {
      const date = new Date(text.slice(0, 23) + 'Z');
      const micros = BigInt(date.getTime()) * 1000n + BigInt(Number(text.slice(23, 26)));
      expect(parseTimestamp27(text), text).toBe(micros);
      expect(formatTimestamp27(micros), text).toBe(text);
    }
  });

  it('reads two instants of one day in a row', () => {
    // The second reuses the day the first computed.
    const first = parseTimestamp27('2026-05-06T07:08:09.000010Z') as bigint;
    expect(parseTimestamp27('2026-05-06T07:08:10.000010Z')).toBe(first + 1_000_000n);
    expect(formatTimestamp27(first)).toBe('2026-05-06T07:08:09.000010Z');
    expect(formatTimestamp27(first + 1n)).toBe('2026-05-06T07:08:09.000011Z');
  });

  it('covers years 0001 to 9999 and nothing beyond', () => {
    expect(formatTimestamp27(MIN_TIMESTAMP27_MICROS)).toBe('0001-01-01T00:00:00.000000Z');
    expect(formatTimestamp27(MAX_TIMESTAMP27_MICROS)).toBe('9999-12-31T23:59:59.999999Z');
    expect(formatTimestamp27(MIN_TIMESTAMP27_MICROS - 1n)).toBeUndefined();
    expect(formatTimestamp27(MAX_TIMESTAMP27_MICROS + 1n)).toBeUndefined();
  });

  it.each([
    '0000-01-01T00:00:00.000000Z',
    '2023-02-29T00:00:00.000000Z',
    '2100-02-29T00:00:00.000000Z',
    '2026-04-31T00:00:00.000000Z',
    '2026-13-01T00:00:00.000000Z',
    '2026-00-01T00:00:00.000000Z',
    '2026-01-00T00:00:00.000000Z',
    '2026-01-32T00:00:00.000000Z',
    '2026-06-31T00:00:00.000000Z',
    '2026-09-31T00:00:00.000000Z',
    '2026-11-31T00:00:00.000000Z',
    '1900-02-29T00:00:00.000000Z',
    '2026-01-01T24:00:00.000000Z',
    '2026-01-01T00:60:00.000000Z',
    '2026-01-01T00:00:60.000000Z',
    '2026-01-01T00:00:00Z',
    '2026-01-01T00:00:00.00000Z',
    '2026-01-01T00:00:00.0000000Z',
    '2026-01-01T00:00:00.000000z',
    '2026-01-01 00:00:00.000000Z',
    '2026-01-01T00:00:00.000000+00:00',
    '+2026-01-01T00:00:00.000000Z',
  ])('refuses %s', (text) => {
    expect(parseTimestamp27(text)).toBeUndefined();
  });

  it('round-trips every instant in range', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: MIN_TIMESTAMP27_MICROS, max: MAX_TIMESTAMP27_MICROS }), (micros) => {
        const text = formatTimestamp27(micros);
        expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
        expect(parseTimestamp27(text as string)).toBe(micros);
      }),
      { numRuns: 2000 },
    );
  });
});
