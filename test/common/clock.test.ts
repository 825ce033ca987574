// The system clock: microseconds that follow the wall clock, with the
// steady resolution of the high-resolution timer between its readings, and
// that never repeat or go back within a process, whatever the wall clock
// does meanwhile (an NTP step, a suspended laptop).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sleepSync, systemClock } from '../../src/common/clock.js';

const HOUR = 3_600_000;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('systemClock', () => {
  it('reads the wall clock in microseconds and advances with real time between readings', () => {
    const clock = systemClock();
    const before = BigInt(Date.now()) * 1000n;
    const first = clock.nowMicros();
    const after = BigInt(Date.now() + 1) * 1000n;
    expect(first >= before - 1000n && first <= after).toBe(true);
    sleepSync(50);
    const second = clock.nowMicros();
    expect(second - first >= 45_000n && second - first < 5_000_000n).toBe(true);
  });

  it('answers strictly increasing readings, however fast they are asked for', () => {
    const clock = systemClock();
    let last = clock.nowMicros();
    for (let n = 0; n < 2000; n++) {
      const now = clock.nowMicros();
      expect(now > last).toBe(true);
      last = now;
    }
  });

  it('follows a wall clock that jumps ahead, and does not go back when it steps back', () => {
    const real = Date.now.bind(Date);
    let offset = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => real() + offset);
    const clock = systemClock();
    const start = clock.nowMicros();
    offset = HOUR;
    const ahead = clock.nowMicros();
    expect(ahead - start >= BigInt(HOUR - 1000) * 1000n).toBe(true);
    offset = 0;
    const back = clock.nowMicros();
    expect(back > ahead).toBe(true);
  });

  it('keeps its own steady count through a wall clock less than a second ahead of it', () => {
    const real = Date.now.bind(Date);
    let offset = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => real() + offset);
    const clock = systemClock();
    const start = clock.nowMicros();
    // 0.9 s ahead: followed, the reading would move at least that far; kept,
    // it moves only by the real time between the two readings.
    offset = 900;
    const now = clock.nowMicros();
    expect(now - start < 800_000n).toBe(true);
  });
});
