// The failure paths of the crash-safe file primitives: what they leave
// behind when the file system refuses a step.
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BatchFileError, noFault, removeStaleTemps, replaceFileAtomic, writeExclusiveSyncedBatch, writeNewFileAtomic } from '../../src/aigpt/storage/fs-atomic.js';

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

  it('writeNewFileAtomic says a taken name exists, leaving the file that holds it and no temp file', async () => {
    await writeFile(join(dir, 'a.json'), 'theirs');
    expect(await writeNewFileAtomic(dir, 'a.json', '{"x":1}')).toBe('exists');
    expect(await readFile(join(dir, 'a.json'), 'utf8')).toBe('theirs');
    expect(await readdir(dir)).toEqual(['a.json']);
  });

  it('removeStaleTemps removes only old temp files of exactly that name', async () => {
    const hourAgo = new Date(Date.now() - 3_600_000);
    const stale = '.self.json.tmp-12-0123456789ab';
    // Fresh (a live write), another name whose dot is any character in a regex, a short suffix, a folder.
    const kept = ['.self.json.tmp-13-0123456789ac', '.selfxjson.tmp-12-0123456789ab', '.self.json.tmp-12-0123456789a', '.self.json.tmp-14-0123456789ad'];
    for (const name of [stale, ...kept.slice(0, 3)]) await writeFile(join(dir, name), '{');
    await mkdir(join(dir, kept[3]!));
    for (const name of [stale, ...kept.slice(1)]) await utimes(join(dir, name), hourAgo, hourAgo);
    expect(await removeStaleTemps(dir, 'self.json', 60_000)).toEqual([stale]);
    expect((await readdir(dir)).sort()).toEqual([...kept].sort());
    // A folder that cannot be listed has none.
    expect(await removeStaleTemps(join(dir, 'missing'), 'self.json', 0)).toEqual([]);
  });
});
