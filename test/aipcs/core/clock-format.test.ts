// Server timestamps before 1970 (an imported artefact may carry any instant
// of years 0001..9999; a wall clock can be set back to before the epoch) are
// rendered as the instants they are, never with a negative fraction.

import { describe, expect, it } from 'vitest';
import { formatTimestamp, formatTimestamp27 } from '../../../src/aipcs/core/time.js';
import { parseTimestamp27 } from '../../../src/aipcs/portable/timestamp27.js';
import { parseTimestamp27 as parseStoredTimestamp } from '../../../src/aipcs/storage/shared/record-codec.js';

describe('server timestamps before the Unix epoch', () => {
  it('render the instant, with a fraction in 0..999999', () => {
    expect(formatTimestamp(-500_000n)).toBe('1969-12-31T23:59:59.500000Z');
    expect(formatTimestamp27(-500_000n)).toBe('1969-12-31T23:59:59.500000Z');
    expect(formatTimestamp(-1n)).toBe('1969-12-31T23:59:59.999999Z');
    expect(formatTimestamp(-1_000_000n)).toBe('1969-12-31T23:59:59Z');
    expect(formatTimestamp27(-1_000_000n)).toBe('1969-12-31T23:59:59.000000Z');
    expect(formatTimestamp(0n)).toBe('1970-01-01T00:00:00Z');
    expect(formatTimestamp(1n)).toBe('1970-01-01T00:00:00.000001Z');
  });

  it('round-trip through the artefact parser and the stored-column parser', () => {
    for (const text of ['1969-12-31T23:59:59.500000Z', '0001-01-01T00:00:00.000001Z', '1900-02-28T12:34:56.654321Z', '2026-11-29T20:26:40.472129Z']) {
      const micros = parseTimestamp27(text);
      expect(micros).toBeDefined();
      expect(formatTimestamp27(micros as bigint)).toBe(text);
      expect(parseStoredTimestamp(formatTimestamp27(micros as bigint))).toBe(micros);
    }
  });
});
