// A record linked under its name is written; failing to remove the spare
// temp name afterwards must not report the save as failed (the caller would
// save it again) — recovery removes the leftover.
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

const failing = vi.hoisted(() => ({ under: undefined as string | undefined }));

vi.mock('node:fs', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs')>();
  const rm: typeof actual.promises.rm = async (path, options) => {
    if (failing.under !== undefined && String(path).startsWith(failing.under)) {
      throw Object.assign(new Error(`EACCES: permission denied, rm '${String(path)}'`), { code: 'EACCES' });
    }
    return actual.promises.rm(path, options);
  };
  const promises = { ...actual.promises, rm };
  return { ...actual, promises, default: { ...actual, promises } };
});

const { writeNewFileAtomic } = await import('../../src/aigpt/fs-atomic.js');

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
