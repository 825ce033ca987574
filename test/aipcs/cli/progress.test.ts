import { describe, expect, it } from 'vitest';
import { TransferProgress } from '../../../src/aipcs/cli/progress.js';

describe('transfer progress lines', () => {
  function recorder(totalBytes: number | null) {
    let now = 0;
    const lines: string[] = [];
    const progress = new TransferProgress({ label: 'aipcs import', write: (line) => lines.push(line), totalBytes, intervalMs: 1000, now: () => now });
    return { progress, lines, advance: (ms: number) => (now += ms) };
  }

  it('prints at most once per interval, with a percentage when the size is known, and a done line per phase', () => {
    const { progress, lines, advance } = recorder(4_000_000);
    progress.begin('validating');
    progress.add(500_000);
    advance(400);
    progress.add(500_000);
    expect(lines).toEqual([]);
    advance(700);
    progress.add(1_000_000);
    advance(100);
    progress.add(1_000_000);
    expect(lines).toEqual(['aipcs import: validating 50% (2.0 of 4.0 MB)\n']);
    advance(1000);
    progress.add(1_000_000);
    progress.begin('staging');
    expect(lines.slice(1)).toEqual(['aipcs import: validating 100% (4.0 of 4.0 MB)\n', 'aipcs import: validating done: 4.0 MB in 2.2 s\n']);
    advance(500);
    progress.add(4_000_000);
    progress.end();
    progress.end();
    expect(lines.slice(3)).toEqual(['aipcs import: staging done: 4.0 MB in 0.5 s\n']);
  });

  it('counts megabytes only when the size is unknown, and ignores bytes outside a phase', () => {
    const { progress, lines, advance } = recorder(null);
    progress.add(9_000_000);
    progress.begin('writing');
    advance(1500);
    progress.add(2_500_000);
    expect(lines).toEqual(['aipcs import: writing 2.5 MB\n']);
  });
});
