// Spec 9.2: an error is one stderr line, `aip: {code}: {message}`. A message
// that names a working-tree path (a link or FIFO `aip status` refuses) or a
// run's argv[0] (the warning of a start_error) printed it raw, so a file
// named `x\naip: fake` made a second, forged `aip: ...` line and escape
// sequences reached the terminal. Error and warning lines now show control
// characters, the line separators and the bidirectional controls as
// JSON-style escapes, as D42 does for log and status lines; the JSON error
// document keeps the exact message.
import { execFileSync } from 'node:child_process';
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

async function repository(): Promise<string> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  return dir;
}

describe('error and warning lines', () => {
  it('escape a refused path that holds a newline or an escape sequence', async () => {
    const dir = await repository();
    await symlink('/etc/hostname', join(dir, 'x\naip: fake'));
    const text = await aip(['status'], { cwd: dir });
    expect(text.code).toBe(5);
    expect(text.stderr).toBe('aip: snapshot.invalid: x\\naip: fake is a symbolic link; a state holds regular files only (ignore it in .aipignore)\n');

    const json = await aip(['--format', 'json', 'status'], { cwd: dir });
    expect(JSON.parse(json.text)).toEqual({
      error: { code: 'snapshot.invalid', message: 'x\naip: fake is a symbolic link; a state holds regular files only (ignore it in .aipignore)' },
    });

    const other = await repository();
    execFileSync('mkfifo', [join(other, 'p\u001b[2J\u202e')]);
    expect((await aip(['status'], { cwd: other })).stderr).toBe(
      'aip: snapshot.invalid: p\\u001b[2J\\u202e is not a regular file; a state holds regular files only (ignore it in .aipignore)\n',
    );
  });

  it('escape the argv[0] a start_error warning names', async () => {
    const dir = await repository();
    const run = await aip(['run', '--', 'no\nsuch'], { cwd: dir });
    expect(run.code).toBe(4);
    expect(run.stderr).toBe('aip: warning: the command did not start: executable not found: no\\nsuch\n');
  });

  it('escape the folder init, checkout and run --keep print (a path with a newline stays one line)', async () => {
    const parent = await tempDir();
    const project = join(parent, 'p\nq');
    const init = await aip(['init', project], { cwd: parent });
    expect(init.code).toBe(0);
    expect(init.text.split('\n')[0]).toBe(`initialized ${parent}/p\\nq/.aip`);
    const into = join(parent, 'c\u001b[2J');
    const checkout = await aip(['checkout', 'HEAD', '--into', into], { cwd: project });
    expect([checkout.code, checkout.text]).toEqual([0, `${parent}/c\\u001b[2J\n`]);
    const json = await aip(['--format', 'json', 'checkout', 'HEAD', '--into', join(parent, 'd\ne')], { cwd: project });
    expect((JSON.parse(json.text) as { path: string }).path).toBe(`${parent}/d\ne`);
    const tmp = join(parent, 't\nu');
    await mkdir(tmp);
    const run = await aip(['run', '--keep', '--', 'true'], { cwd: project, env: { TMPDIR: tmp } });
    expect(run.code).toBe(0);
    const kept = run.text.trimEnd().split('\n').at(-1) ?? '';
    expect(kept.startsWith(`${parent}/t\\nu/`)).toBe(true);
  });
});
