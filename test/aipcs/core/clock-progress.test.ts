// Export/import progress lines measure durations on a monotonic clock: a
// wall clock stepped back must neither print a negative duration nor hold
// back the periodic lines for the length of the step.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { TransferProgress } from '../../../src/aipcs/cli/progress.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('transfer progress while the wall clock steps back', () => {
  it('keeps printing and never reports a negative duration', async () => {
    const real = Date.now.bind(Date);
    let offset = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => real() + offset);
    const lines: string[] = [];
    const progress = new TransferProgress({ label: 'aipcs export', write: (line) => lines.push(line), intervalMs: 10 });
    progress.begin('writing');
    offset = -3_600_000;
    await new Promise((resolve) => setTimeout(resolve, 30));
    progress.add(1_000_000);
    progress.end();
    expect(lines[0]).toBe('aipcs export: writing 1.0 MB\n');
    expect(lines[1]).toMatch(/^aipcs export: writing done: 1\.0 MB in [0-9]+\.[0-9] s\n$/);
  });
});
