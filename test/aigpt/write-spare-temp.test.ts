// A record linked under its name is written; failing to remove the spare
// temp name afterwards must not report the save as failed (the caller would
// save it again) — recovery removes the leftover.
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

// The removal goes through common/exclusive-link's removeQuietly (node:fs/promises).
vi.mock('node:fs/promises', async (original) => (await import('../support/failing-rm.js')).withFailingRm(await original()));
const { failingRm: failing } = await import('../support/failing-rm.js');

const { writeNewFileAtomic } = await import('../../src/aigpt/storage/fs-atomic.js');

describe('writeNewFileAtomic', () => {
  it('reports a file created when only the removal of its linked temp name fails', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'aigpt-spare-temp-'));
    failing.under = join(dir, '.');
    try {
      expect(await writeNewFileAtomic(dir, 'a.json', '{"x":1}')).toBe('created');
    } finally {
      failing.under = undefined;
    }
    expect(await readFile(join(dir, 'a.json'), 'utf8')).toBe('{"x":1}');
    const names = await readdir(dir);
    expect(names.sort()).toEqual([expect.stringMatching(/^\.a\.json\.tmp-/) as unknown as string, 'a.json']);
  });
});
