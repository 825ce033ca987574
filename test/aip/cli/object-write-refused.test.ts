// An object write the file system refuses (a full disk: ENOSPC; here the
// same failure made with a file size limit: EFBIG) says which object could
// not be written, removes its temp file and stores nothing: the repository
// verifies as before. The bare `aip: io: ENOSPC` named neither; nor did it
// name the reverse index file whose append failed.
import { appendFile, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

describe('an object write the file system refuses', () => {
  it('names the object, leaves no temp file and stores nothing', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const before = await aip(['verify', '--format', 'json'], { cwd: dir });
    expect(before.code, before.stderr).toBe(0);
    // 8 blocks: 4 or 8 KiB, whichever block size the shell uses; the object is 20 KB.
    const refused = await aip(['put', '--from', 'raw', '-'], { cwd: dir, input: 'x'.repeat(20_000), fileSizeLimitBlocks: 8 });
    expect(refused.code).toBe(6);
    expect(refused.stderr).toMatch(/^aip: io: cannot write object [0-9a-f]{64}: EFBIG\n$/);
    expect(refused.text).toBe('');
    expect(await readdir(join(dir, '.aip', 'tmp'))).toEqual([]);
    const after = await aip(['verify', '--format', 'json'], { cwd: dir });
    expect(after.code, after.stderr).toBe(0);
    expect(after.text).toBe(before.text);
    // The same object stores once the write can go through.
    const stored = await aip(['put', '--from', 'raw', '-'], { cwd: dir, input: 'x'.repeat(20_000) });
    expect(stored.code, stored.stderr).toBe(0);
    expect(refused.stderr).toContain(stored.text.trim().split(/\s+/).find((word) => /^[0-9a-f]{64}$/.test(word)));
  });

  it('names the reverse index file whose append failed, and stores nothing', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const snapshot = await aip(['snapshot', '--title', 't', '--goal', 'g', '--allow-empty'], { cwd: dir });
    expect(snapshot.code, snapshot.stderr).toBe(0);
    const intent = /^intent ([0-9a-f]{64})$/m.exec(snapshot.text)?.[1] as string;
    // The intent's index file grown past the limit (8 KiB under either shell)
    // with copies of its own line, which readers take once.
    const refs = join(dir, '.aip', 'index', 'v1', 'refs', intent.slice(0, 2), intent.slice(2));
    const line = (await readFile(refs, 'utf8')).split('\n')[0] as string;
    await appendFile(refs, `${line}\n`.repeat(150));
    const before = await aip(['verify', '--all', '--format', 'json'], { cwd: dir });
    expect(before.code, before.stderr).toBe(0);
    const refused = await aip(['op', '--intent', intent, '--allow-empty'], { cwd: dir, fileSizeLimitBlocks: 8 });
    expect(refused.code).toBe(6);
    expect(refused.stderr).toBe(`aip: io: cannot write the reverse index file ${refs}: EFBIG\n`);
    const after = await aip(['verify', '--all', '--format', 'json'], { cwd: dir });
    expect(after.code, after.stderr).toBe(0);
    expect(after.text).toBe(before.text);
  });
});
