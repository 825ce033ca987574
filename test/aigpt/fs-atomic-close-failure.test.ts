// A close(2) that fails (EIO from a network file system flushing at close)
// fails the write, and the file it created is removed like after a failed
// write: a temp file must not stay until the next recovery.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

/** Files created under `under` fail their close (after closing the descriptor). */
const failing: { under: string | undefined } = { under: undefined };

vi.mock('node:fs', async (original) => {
  const actual = await original<typeof import('node:fs')>();
  const open = (async (path: string, flags?: string, mode?: number) => {
    const handle = await actual.promises.open(path, flags, mode);
    if (failing.under !== undefined && String(path).startsWith(failing.under)) {
      const close = handle.close.bind(handle);
      handle.close = async () => {
        await close();
        throw Object.assign(new Error('EIO: i/o error, close'), { code: 'EIO' });
      };
    }
    return handle;
  }) as typeof actual.promises.open;
  const promises = { ...actual.promises, open };
  return { ...actual, promises, default: { ...actual, promises } };
});

const { replaceFileAtomic, writeNewFileAtomic } = await import('../../src/aigpt/storage/fs-atomic.js');

describe('fs-atomic when closing a written file fails', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aigpt-close-failure-'));
  });
  afterEach(async () => {
    failing.under = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('writeNewFileAtomic and replaceFileAtomic fail and leave no temp file', async () => {
    failing.under = join(dir, '.');
    await expect(writeNewFileAtomic(dir, 'a.json', '{"x":1}')).rejects.toThrow(/EIO/);
    await expect(replaceFileAtomic(dir, 'b.json', '{"x":1}')).rejects.toThrow(/EIO/);
    expect(await readdir(dir)).toEqual([]);
  });
});
