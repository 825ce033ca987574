// Process facts behind the lock holders' liveness: /proc/{pid}/stat is read
// past the command name's last ')' (a name may hold ') Z (' and more), a lock
// that recorded no start mark is judged by its pid alone, one whose pid /proc
// cannot mark is not judged by the mark, and owner tags of older names (no
// namespace) still parse.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockHolderAlive, OWNER_TAG_PATTERN, processExists, processStartMark } from '../../src/common/process.js';

const onLinux = process.platform === 'linux' && processStartMark(process.pid) !== undefined;
/** A pid no process has here: far above any pid_max in use. */
const NO_SUCH_PID = 4_194_000;

const work = mkdtempSync(join(tmpdir(), 'process-facts-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

/** A live `sleep` whose command name (from the link it runs as) reads like the end of another stat line. */
async function oddlyNamedProcess(): Promise<number> {
  const link = join(work, 'x) Z 1 (y');
  symlinkSync('/bin/sleep', link);
  const child = spawn(link, ['30'], { stdio: 'ignore' });
  children.push(child);
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return child.pid as number;
}

describe.runIf(onLinux && existsSync('/bin/sleep'))('a process whose command name holds parentheses', () => {
  it('is alive, and its start mark is its own start time', async () => {
    const pid = await oddlyNamedProcess();
    expect(processExists(pid)).toBe(true);
    const mark = processStartMark(pid);
    expect(mark).toMatch(/^[0-9a-f-]{36}\/[0-9]+$/);
    const [boot, ticks] = (mark as string).split('/');
    const [ownBoot, ownTicks] = (processStartMark(process.pid) as string).split('/');
    // Started after this process, in the same boot.
    expect(boot).toBe(ownBoot);
    expect(BigInt(ticks as string) >= BigInt(ownTicks as string)).toBe(true);
    expect(processStartMark(pid)).toBe(mark);
  });
});

describe('lockHolderAlive', () => {
  it('judges a lock without a start mark by its pid alone', () => {
    expect(lockHolderAlive(process.pid, undefined)).toBe(true);
    expect(lockHolderAlive(NO_SUCH_PID, undefined)).toBe(false);
  });

  it.runIf(onLinux)('takes a live pid that /proc cannot mark as the holder, whatever mark the lock has', () => {
    expect(lockHolderAlive(NO_SUCH_PID, 'someone/1', () => true)).toBe(true);
    expect(lockHolderAlive(process.pid, processStartMark(process.pid))).toBe(true);
    expect(lockHolderAlive(process.pid, 'someone/1')).toBe(false);
  });
});

describe('OWNER_TAG_PATTERN', () => {
  it('reads a tag with a namespace, and an older one with none', () => {
    const tag = new RegExp(`^${OWNER_TAG_PATTERN}$`);
    expect([...(tag.exec('123.4026531836') ?? [])].slice(1)).toEqual(['123', '4026531836']);
    expect([...(tag.exec('123') ?? [])].slice(1)).toEqual(['123', undefined]);
  });
});
