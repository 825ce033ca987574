// `aip run` runs argv without a shell (spec 8 step 3). Node spawns through
// execvp, which hands a file the kernel refuses (ENOEXEC) to /bin/sh; D14
// already refused files that are neither ELF nor `#!` scripts. More kinds
// slipped through and ran under a shell the evidence does not name: a file
// that starts with the ELF magic but is no program the kernel loads, and a
// `#!` script whose interpreter is itself such a file (the kernel refuses the
// script, and /bin/sh then ran the script's body); likewise a `#!` line that
// names no interpreter. All are now the start_error of step 3 (`spawn {path} ENOEXEC`), with nothing run.
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir, writeTree } from '../support/temp.js';

requireBuiltBin();

async function binfmtHandlers(): Promise<string[]> {
  try {
    return (await readdir('/proc/sys/fs/binfmt_misc')).filter((n) => n !== 'register' && n !== 'status');
  } catch {
    return []; // not mounted
  }
}

// ELF magic, then text: no valid ELF header (type and machine are text bytes).
const FAKE_ELF = '\x7fELF\necho ran-under-sh\nexit 7\n';

describe('aip run: a file the kernel refuses is a start_error, never a run under /bin/sh', () => {
  it.runIf(process.platform === 'linux')('an ELF-looking file that is no program, a #! script whose interpreter is one, and a #! naming no interpreter', async () => {
    if ((await binfmtHandlers()).length > 0) return; // registered handlers may run anything: the kernel decides
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    await writeTree(dir, {
      'fake-elf': FAKE_ELF,
      'interp': 'echo interpreter-ran-under-sh\n',
      'script': '#!./interp\necho script-ran-under-sh\nexit 9\n',
      'no-interpreter': '#! \t\necho no-interpreter-ran-under-sh\n',
      'good.sh': '#!/bin/sh\necho good\n',
    }, ['fake-elf', 'interp', 'script', 'no-interpreter', 'good.sh']);
    expect((await aip(['snapshot', '--title', 't', '--goal', 'g'], { cwd: dir })).code).toBe(0);

    for (const name of ['fake-elf', 'script', 'no-interpreter']) {
      const run = await aip(['--format', 'json', 'run', '--', `./${name}`], { cwd: dir });
      const evidence = JSON.parse(run.text) as { data: { termination: string; error: string; exit_code: number | null; stdout: { artifact: string } } };
      expect(evidence.data, name).toMatchObject({ termination: 'start_error', exit_code: null });
      expect(evidence.data.error, name).toMatch(new RegExp(`^spawn /.*/aip-run-[^/]+/${name} ENOEXEC$`));
      expect(run.code, name).toBe(4);
      const out = await aip(['cat', '--content', evidence.data.stdout.artifact], { cwd: dir });
      expect(out.text, name).toBe('');
    }

    const good = await aip(['run', '--', './good.sh'], { cwd: dir });
    expect(good.code).toBe(0);
  });
});
