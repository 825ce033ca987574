// `aip snapshot` and `aip apply` store what they make, then move HEAD by
// compare-and-swap (spec 7.3, 9.3). When another aip process moved HEAD
// meanwhile, the move fails (`HEAD moved from X to Z`, exit 1) but the
// objects are already stored; their IDs used to be printed nowhere, so the
// recorded work could only be found again by searching the store. Now a
// warning on stderr names them and the command that moves HEAD to the state;
// the error line stays as the spec words it (D52, D54). HEAD is moved by the
// aip process itself just before it takes the lock for the move
// (change-at.mjs), so the race lands at the same point every time.
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const CHANGE_AT = resolve(dirname(fileURLToPath(import.meta.url)), '../support/change-at.mjs');
const ROOT = 'd3892a5bf1fef7589daf0d297b76d3a0630d2c516352ce43f758fd34ad632ef6';

/** A repository whose HEAD is a first snapshot (of `a.txt`), with `b.txt` added since. */
async function repositoryWithChange(): Promise<{ dir: string; head: string }> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  await writeFile(join(dir, 'a.txt'), 'a\n');
  const first = await aip(['snapshot', '--title', 'a', '--goal', 'add a'], { cwd: dir });
  expect(first.code).toBe(0);
  await writeFile(join(dir, 'b.txt'), 'b\n');
  return { dir, head: /state ([0-9a-f]{64})/.exec(first.text)![1]! };
}

/** Runs `args` while HEAD is moved back to the root state just before the command takes the lock to move it. */
function raceHead(dir: string, args: string[]): ReturnType<typeof aip> {
  return aip(args, {
    cwd: dir,
    nodeArgs: ['--import', CHANGE_AT],
    env: {
      AIP_TEST_CHANGE_AT: 'link:1',
      AIP_TEST_CHANGE_MATCH: join('.aip', 'lock'),
      AIP_TEST_CHANGE_DO: 'text',
      AIP_TEST_CHANGE_PATH: join(dir, '.aip', 'HEAD'),
      AIP_TEST_CHANGE_TEXT: `${ROOT}\n`,
    },
  });
}

/** The raced command's stderr: the warning matched by `warning`, then the unchanged error line. Returns the warning's groups. */
function expectWarned(raced: Awaited<ReturnType<typeof aip>>, warning: RegExp, head: string): string[] {
  expect(raced.code).toBe(1);
  expect(raced.text).toBe('');
  const match = warning.exec(raced.stderr);
  expect(match).not.toBeNull();
  expect(raced.stderr.slice(match![0].length)).toBe(`aip: head.moved: HEAD moved from ${head} to ${ROOT}\n`);
  return match!.slice(1);
}

/** The named state is stored, built on the old HEAD from `b.txt`'s tree, and HEAD can be moved to it. */
async function expectStoredState(dir: string, state: string, expected: Record<string, unknown>): Promise<void> {
  const shown = JSON.parse((await aip(['show', state], { cwd: dir })).text) as { data: { files: Record<string, unknown> } };
  expect(shown.data).toMatchObject(expected);
  expect(Object.keys(shown.data.files)).toContain('b.txt');
  expect((await aip(['head'], { cwd: dir })).text).toBe(`${ROOT}\n`);
  expect((await aip(['head', state], { cwd: dir })).code).toBe(0);
  expect((await aip(['status'], { cwd: dir })).text).toBe('');
}

describe('aip snapshot and aip apply when HEAD moves under them', () => {
  it('snapshot fails with head.moved and names the stored intent, operation and state', async () => {
    const { dir, head } = await repositoryWithChange();
    const raced = await raceHead(dir, ['snapshot', '--title', 'b', '--goal', 'add b']);
    const [intent, operation, state, base] = expectWarned(
      raced,
      /^aip: warning: HEAD was not moved; the snapshot is stored as intent ([0-9a-f]{64}), operation ([0-9a-f]{64}), state ([0-9a-f]{64}) \(based on ([0-9a-f]{64})\); to move HEAD to it: aip head \3\n/,
      head,
    );
    expect(base).toBe(head);
    await expectStoredState(dir, state!, { parents: [head], operations: [operation], intents: [intent] });
  });

  it('apply fails with head.moved and names the stored state', async () => {
    const { dir, head } = await repositoryWithChange();
    const intent = (await aip(['intent', '--title', 'b', '--goal', 'add b'], { cwd: dir })).text.trim();
    const operation = (await aip(['op', '--intent', intent], { cwd: dir })).text.trim();
    const raced = await raceHead(dir, ['apply', operation]);
    const [state, base] = expectWarned(
      raced,
      /^aip: warning: HEAD was not moved; the operation's resulting state is stored as state ([0-9a-f]{64}) \(based on ([0-9a-f]{64})\); to move HEAD to it: aip head \1\n/,
      head,
    );
    expect(base).toBe(head);
    await expectStoredState(dir, state!, { parents: [head], operations: [operation] });
  });
});
