// A standard input that cannot be read, through the built bins: a folder on
// fd 0 (`< /`), which Node hands over as an input that is empty and ends at
// once, and an fd 0 opened only for writing (`0>file`, EBADF on read). Neither
// is an empty input nor a client that ended its session: `aip put --from raw
// - < dir` stored the empty artifact and exited 0, and both servers ended as
// if the client had closed stdin.

import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { aipcsBin, builtBin } from '../support/bins.js';

const scratch = mkdtempSync(join(tmpdir(), 'stdin-read-failure-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const STDINS = {
  folder: { code: 'EISDIR', open: () => openSync(scratch, 'r') },
  'write-only fd': { code: 'EBADF', open: () => openSync(join(scratch, 'write-only.txt'), 'w') },
} as const;

function run(bin: string, args: string[], stdin: number, cwd = scratch, home = scratch): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [bin, ...args], {
    cwd,
    env: { PATH: process.env['PATH'] ?? '', HOME: home },
    encoding: 'utf8',
    stdio: [stdin, 'pipe', 'pipe'],
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe.each(Object.entries(STDINS))('a standard input that cannot be read: %s', (_name, stdin) => {
  it('aip put and import say so (io, exit 6), and store nothing', () => {
    const aip = builtBin('aip/cli/main.js');
    const project = mkdtempSync(join(scratch, 'aip-'));
    const nothing = openSync('/dev/null', 'r');
    try {
      expect(run(aip, ['init', '.'], nothing, project).status).toBe(0);
    } finally {
      closeSync(nothing);
    }
    const objects = (): string[] => readdirSync(join(project, '.aip', 'objects'), { recursive: true }).map(String).sort();
    const before = objects();
    for (const args of [['put', '--from', 'raw', '-'], ['put', '-'], ['put', '--from', 'json', '-'], ['import', '-'], ['import']]) {
      const fd = stdin.open();
      try {
        const result = run(aip, args, fd, project);
        expect([args, result.status, result.stdout, result.stderr]).toEqual([args, 6, '', `aip: io: cannot read stdin: ${stdin.code}\n`]);
      } finally {
        closeSync(fd);
      }
    }
    expect(objects()).toEqual(before);
  });

  it('aipcs serve ends with its start-up failure, naming the code (exit 2)', () => {
    const root = join(scratch, `aipcs-${stdin.code}`);
    const fd = stdin.open();
    try {
      const result = run(aipcsBin(), ['serve', '--profile', 'sqlite', '--principal-id', 'p', '--sqlite-data-root', root], fd);
      expect(result.status).toBe(2);
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines[0]).toBe(`aipcs warn: stdin could not be read (${stdin.code}); the session ended`);
      expect(JSON.parse(lines.at(-1) ?? '')).toEqual({
        ok: false,
        result: null,
        error: { code: 'internal_error', message: 'Server could not be started safely.', issues: [], retryable: false },
      });
    } finally {
      closeSync(fd);
    }
  });

  it('aigpt server says so (exit 1)', () => {
    const home = join(scratch, `aigpt-${stdin.code}`);
    mkdirSync(home, { mode: 0o700 });
    const fd = stdin.open();
    try {
      const result = run(builtBin('aigpt/cli/main.js'), ['server'], fd, scratch, home);
      expect([result.status, result.stdout, result.stderr]).toEqual([1, '', `aigpt: cannot read stdin: ${stdin.code}\n`]);
    } finally {
      closeSync(fd);
    }
  });
});

describe('an input that ends is still a normal end', () => {
  it('aipcs serve and aigpt server exit 0 on /dev/null', () => {
    const nothing = openSync('/dev/null', 'r');
    try {
      expect(run(aipcsBin(), ['serve', '--profile', 'sqlite', '--principal-id', 'p', '--sqlite-data-root', join(scratch, 'aipcs-null')], nothing).status).toBe(0);
      const home = join(scratch, 'aigpt-null');
      mkdirSync(home, { mode: 0o700 });
      expect(run(builtBin('aigpt/cli/main.js'), ['server'], nothing, scratch, home)).toMatchObject({ status: 0, stderr: '' });
    } finally {
      closeSync(nothing);
    }
  });
});
