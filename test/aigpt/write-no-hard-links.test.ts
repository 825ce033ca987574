// On a file system without hard links (FAT, several FUSE and network ones)
// writeNewFileAtomic publishes by rename after checking the name is free:
// it must still never replace a file that holds the name.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/common/exclusive-link.js', async (original) => ({
  ...(await original<typeof import('../../src/common/exclusive-link.js')>()),
  linkIfAbsent: () => Promise.resolve('unsupported'),
}));

const { writeNewFileAtomic } = await import('../../src/aigpt/storage/fs-atomic.js');

describe('writeNewFileAtomic where hard links are unsupported', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aigpt-no-links-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('publishes a free name by rename, leaving no temp file', async () => {
    expect(await writeNewFileAtomic(dir, 'a.json', '{"x":1}')).toBe('created');
    expect(await readFile(join(dir, 'a.json'), 'utf8')).toBe('{"x":1}');
    expect(await readdir(dir)).toEqual(['a.json']);
  });

  it('says the name exists and leaves the file holding it as it was', async () => {
    await writeFile(join(dir, 'a.json'), 'theirs');
    expect(await writeNewFileAtomic(dir, 'a.json', '{"x":1}')).toBe('exists');
    expect(await readFile(join(dir, 'a.json'), 'utf8')).toBe('theirs');
    expect(await readdir(dir)).toEqual(['a.json']);
  });
});
