// linkIfAbsent publishes a file under a name only while nothing holds it, so
// of two writers racing for one name exactly one creates it: a taken name is
// `exists` (never `unsupported`, whose fallback is exclusive only under the
// caller's lock), a file system without links is `unsupported`, anything else
// fails. removeQuietly never fails its caller.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { linkIfAbsent, removeQuietly } from '../../src/common/exclusive-link.js';

const work = mkdtempSync(join(tmpdir(), 'exclusive-link-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('linkIfAbsent', () => {
  it('links a free name to the file, leaving the source', async () => {
    writeFileSync(join(work, 'free-src'), 'bytes');
    expect(await linkIfAbsent(join(work, 'free-src'), join(work, 'free'))).toBe('linked');
    expect(readFileSync(join(work, 'free'), 'utf8')).toBe('bytes');
    expect(existsSync(join(work, 'free-src'))).toBe(true);
  });

  it('says a taken name exists and leaves its file as it was', async () => {
    writeFileSync(join(work, 'taken-src'), 'new');
    writeFileSync(join(work, 'taken'), 'old');
    expect(await linkIfAbsent(join(work, 'taken-src'), join(work, 'taken'))).toBe('exists');
    expect(readFileSync(join(work, 'taken'), 'utf8')).toBe('old');
  });

  it('fails with the system error for any other refusal (a missing source)', async () => {
    await expect(linkIfAbsent(join(work, 'no-such-src'), join(work, 'never'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(existsSync(join(work, 'never'))).toBe(false);
  });

  const otherDevice = existsSync('/dev/shm') && statSync('/dev/shm').dev !== statSync(work).dev;
  it.runIf(otherDevice)('takes a target on another file system (EXDEV) as unsupported', async () => {
    const shm = mkdtempSync('/dev/shm/exclusive-link-');
    try {
      writeFileSync(join(work, 'cross-src'), 'bytes');
      expect(await linkIfAbsent(join(work, 'cross-src'), join(shm, 'cross'))).toBe('unsupported');
    } finally {
      rmSync(shm, { recursive: true, force: true });
    }
  });
});

describe('removeQuietly', () => {
  it('removes the file, and settles where there is nothing to remove or it cannot be removed', async () => {
    writeFileSync(join(work, 'gone'), 'x');
    await removeQuietly(join(work, 'gone'));
    expect(existsSync(join(work, 'gone'))).toBe(false);
    await expect(removeQuietly(join(work, 'gone'))).resolves.toBeUndefined();
    // Under a file: rm fails with ENOTDIR.
    await expect(removeQuietly(join(work, 'taken', 'x'))).resolves.toBeUndefined();
  });
});
