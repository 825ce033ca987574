// The history reader's text budget and the comparable-timestamp range, at
// their boundaries: pure codec functions both backends share.

import { describe, expect, it } from 'vitest';
import { StorageFailure } from '../../../src/aipcs/core/ports.js';
import { comparableTimestamp27, historyRowsWithinBudget, parseTimestamp27 } from '../../../src/aipcs/storage/shared/record-codec.js';

// A row of the history page query's select list followed by event_sequence.
const row = (version: bigint, after: string): unknown[] => ['note', 'r', version, 'update', null, after, 10n, version];

describe('historyRowsWithinBudget', () => {
  it('reads on while the text read equals the budget, and stops at the first row past it', () => {
    const rows = [row(1n, '{"t":"aaaa"}'), row(2n, '{"t":"bbbb"}'), row(3n, '{"t":"cccc"}'), row(4n, '{"t":"dddd"}')];
    const exact = 2 * '{"t":"aaaa"}'.length;
    expect(historyRowsWithinBudget(rows, exact).events.map((event) => event.sequence)).toEqual([1n, 2n, 3n]);
    expect(historyRowsWithinBudget(rows, exact).cut).toBe(true);
    expect(historyRowsWithinBudget(rows, exact - 1)).toMatchObject({ events: [{ sequence: 1n }, { sequence: 2n }], cut: true });
  });
});

describe('comparableTimestamp27', () => {
  it('renders the first and last instants of years 0000..9999 and nothing outside them', () => {
    expect(comparableTimestamp27(-62_167_219_200_000_000n)).toBe('0000-01-01T00:00:00.000000Z');
    expect(comparableTimestamp27(-62_167_219_200_000_001n)).toBeNull();
    expect(comparableTimestamp27(253_402_300_799_999_999n)).toBe('9999-12-31T23:59:59.999999Z');
    expect(comparableTimestamp27(253_402_300_800_000_000n)).toBeNull();
  });
});

describe('parseTimestamp27', () => {
  it('reads a stored time, and refuses a corrupted one shaped like a time as a storage failure', () => {
    expect(parseTimestamp27('2026-01-02T03:04:05.000006Z')).toBe(1_767_323_045_000_006n);
    for (const corrupted of ['2026-13-01T00:00:00.000000Z', '2026-00-10T00:00:00.000000Z', '2026-01-01T00:00:00.00000Z', '2026-01-01 00:00:00.000000Z']) {
      let failure: unknown;
      try {
        parseTimestamp27(corrupted);
      } catch (error) {
        failure = error;
      }
      expect(failure, corrupted).toBeInstanceOf(StorageFailure);
      expect((failure as StorageFailure).kind, corrupted).toBe('unavailable');
    }
  });
});
