// The stamp of a change: never before any earlier time of the object it
// changes (creation, update, activity), whatever order those are in.

import { describe, expect, it } from 'vitest';
import { timeAfter } from '../../../src/aipcs/core/time.js';

const LAST = 253_402_300_799_999_999n; // 9999-12-31T23:59:59.999999Z

describe('timeAfter', () => {
  it('is now when now is later than every earlier time', () => {
    expect(timeAfter(100n, 10n, 99n)).toBe(100n);
    expect(timeAfter(100n)).toBe(100n);
  });

  it('is one microsecond after the latest earlier time otherwise, in whatever order they come', () => {
    expect(timeAfter(100n, 100n)).toBe(101n);
    // An imported record updated "before" it was created: a writer between the two stays after the creation.
    expect(timeAfter(50n, 80n, 40n)).toBe(81n);
    expect(timeAfter(50n, 40n, 80n, 60n)).toBe(81n);
  });

  it('keeps the last instant a timestamp can name', () => {
    expect(timeAfter(0n, LAST)).toBe(LAST);
    expect(timeAfter(0n, LAST - 1n)).toBe(LAST);
  });
});
