// Option defaults and refusals of spec 9.3 that a script relies on, checked
// through the built bin: report's and run's defaults (kind, notes, cwd,
// reporter, platform, operations), op's refusal of an empty diff, the
// refusals of options that cannot go together, and the JSON error document
// read only from aip's own options, never from the command after `--`.
import { userInfo } from 'node:os';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const T0 = '2026-01-01T00:00:00.000000000Z';

/** A repository whose HEAD is a state made by one snapshot: its operations are not empty. */
async function snapshotted(): Promise<{ dir: string; intent: string; operation: string; state: string }> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  await writeFile(join(dir, 'a.txt'), 'a\n');
  const snap = await aip(['--format', 'json', 'snapshot', '--title', 't', '--goal', 'g', '--created-at', T0], { cwd: dir });
  expect(snap.code).toBe(0);
  return { dir, ...(JSON.parse(snap.text) as { intent: string; operation: string; state: string }) };
}

describe('defaults (spec 9.3)', () => {
  it('report: state HEAD, operations the state\'s, reporter the OS user, platform os/arch, cwd ., notes empty', async () => {
    const { dir, operation, state } = await snapshotted();
    const report = await aip(['--format', 'json', 'report', '--kind', 'k', '--command', 'c', '--result', 'pass', '--recorded-at', T0], { cwd: dir });
    expect(report.code, report.stderr).toBe(0);
    expect((JSON.parse(report.text) as { data: unknown }).data).toEqual({
      cwd: '.',
      kind: 'k',
      notes: '',
      state,
      result: 'pass',
      command: 'c',
      platform: `${process.platform}/${process.arch}`,
      reporter: userInfo().username,
      operations: [operation],
      provenance: 'reported',
      recorded_at: T0,
    });
    const none = await aip(['--format', 'json', 'report', '--kind', 'k', '--command', 'c', '--result', 'fail', '--no-operations'], { cwd: dir });
    expect((JSON.parse(none.text) as { data: { operations: string[] } }).data.operations).toEqual([]);
  });

  it('run: kind command, operations the state\'s unless --no-operations', async () => {
    const { dir, operation, state } = await snapshotted();
    const run = await aip(['--format', 'json', 'run', '--', 'true'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.text) as { data: unknown }).data).toMatchObject({ kind: 'command', state, operations: [operation] });
    const none = await aip(['--format', 'json', 'run', '--no-operations', '--', 'true'], { cwd: dir });
    expect(none.code, none.stderr).toBe(0);
    expect((JSON.parse(none.text) as { data: unknown }).data).toMatchObject({ kind: 'command', state, operations: [] });
  });
});

describe('refusals (spec 9.2, 9.3)', () => {
  it('op refuses an empty diff (operation.empty, exit 1) unless --allow-empty', async () => {
    const { dir, intent } = await snapshotted();
    const empty = await aip(['op', '--intent', intent], { cwd: dir });
    expect([empty.code, empty.text]).toEqual([1, '']);
    expect(empty.stderr).toMatch(/^aip: operation\.empty: /);
    const allowed = await aip(['op', '--intent', intent, '--allow-empty'], { cwd: dir });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.text).toMatch(/^[0-9a-f]{64}\n$/);
  });

  it('verify and export refuse IDs together with --all (usage, exit 2)', async () => {
    const { dir } = await snapshotted();
    for (const command of ['verify', 'export']) {
      const both = await aip([command, '--all', 'HEAD'], { cwd: dir });
      expect([both.code, both.text, both.stderr], command).toEqual([2, '', 'aip: usage: give IDs or --all, not both\n']);
    }
  });

  it('snapshot refuses --intent with any option that describes a new intent (usage, exit 2), HEAD unmoved', async () => {
    const { dir, intent, state } = await snapshotted();
    await writeFile(join(dir, 'b.txt'), 'b\n');
    for (const extra of [['--title', 'x'], ['--goal', 'x'], ['--created-at', T0], ['--constraint', 'x'], ['--context', intent], ['--parent', intent]]) {
      const both = await aip(['snapshot', '--intent', intent, ...extra], { cwd: dir });
      expect([both.code, both.stderr], extra[0]).toEqual([2, 'aip: usage: give --intent or --title/--goal (with the other intent options), not both\n']);
    }
    expect((await aip(['head'], { cwd: dir })).text).toBe(`${state}\n`);
  });

  it('checkout refuses --into a folder holding a single entry (usage, exit 2) and leaves it as it was', async () => {
    const { dir } = await snapshotted();
    const into = join(dir, 'one');
    await mkdir(into);
    await writeFile(join(into, 'keep.txt'), 'mine\n');
    const refused = await aip(['checkout', 'HEAD', '--into', into], { cwd: dir });
    expect([refused.code, refused.text, refused.stderr]).toEqual([2, '', `aip: usage: --into ${into} is not empty; checkout writes only into a new or empty folder\n`]);
    expect(await readdir(into)).toEqual(['keep.txt']);
  });

  it('--format json after -- belongs to the command run: an error prints no JSON document', async () => {
    const outside = await tempDir();
    const text = await aip(['run', '--', 'echo', '--format', 'json'], { cwd: outside });
    expect([text.code, text.text]).toEqual([3, '']);
    expect(text.stderr).toMatch(/^aip: repo\.not_found: /);
    const json = await aip(['--format', 'json', 'run', '--', 'echo', '--format', 'text'], { cwd: outside });
    expect(json.code).toBe(3);
    expect((JSON.parse(json.text) as { error: { code: string } }).error.code).toBe('repo.not_found');
  });
});
