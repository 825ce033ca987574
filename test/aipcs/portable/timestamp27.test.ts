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
