// A wall clock that can be stepped, as NTP or an operator would: Date.now is
// spied on (restore it with vi.restoreAllMocks), everything else is real.

import { vi } from 'vitest';

/** Date.now as if the wall clock were stepped by `offsetMs` once `step()` is called. */
export function steppableWallClock(offsetMs: number): { step(): void } {
  const real = Date.now.bind(Date);
  let offset = 0;
  vi.spyOn(Date, 'now').mockImplementation(() => real() + offset);
  return {
    step() {
      offset = offsetMs;
    },
  };
}
