// The failure paths of the crash-safe file primitives: what they leave
// behind when the file system refuses a step.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BatchFileError, noFault, replaceFileAtomic, writeExclusiveSyncedBatch } from '../../src/aigpt/storage/fs-atomic.js';

describe('fs-atomic failure paths', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aigpt-fs-atomic-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('replaceFileAtomic removes its temp file when the rename into place fails', async () => {
    // rename(2) cannot replace a folder that holds something.
    await mkdir(join(dir, 'target'));
    await writeFile(join(dir, 'target', 'inside'), 'x');
    await expect(replaceFileAtomic(dir, 'target', 'new')).rejects.toThrow();
    expect(await readdir(dir)).toEqual(['target']);
  });

  it('a batch with a name already taken removes only the files it created and names the taken one', async () => {
    await writeFile(join(dir, 'b'), 'theirs');
    const files = ['a', 'b', 'c'].map((name) => ({ path: join(dir, name), content: name }));
    const failure = await writeExclusiveSyncedBatch(files, noFault, 'test').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(BatchFileError);
    expect((failure as BatchFileError).index).toBe(1);
    expect(await readdir(dir)).toEqual(['b']);
    expect(await readFile(join(dir, 'b'), 'utf8')).toBe('theirs');
  });
});
