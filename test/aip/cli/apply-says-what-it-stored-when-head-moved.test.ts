// `aip apply OP` stores the operation's resulting state and, when HEAD is the
// operation's base, moves HEAD to it by compare-and-swap (spec 7.3, 9.3).
// When another aip process moved HEAD meanwhile, the move fails (`HEAD moved
// from X to Z`, exit 1) but the state is already stored; its ID used to be
// printed nowhere. Now a warning on stderr names it and the command that moves
// HEAD to it, worded as `aip snapshot`'s (D52); the error line stays as the
// spec words it. HEAD is moved by the aip process itself just before it takes
// the lock for the move (change-at.mjs), so the race lands at the same point
// every time.
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const CHANGE_AT = resolve(dirname(fileURLToPath(import.meta.url)), '../support/change-at.mjs');
const ROOT = 'd3892a5bf1fef7589daf0d297b76d3a0630d2c516352ce43f758fd34ad632ef6';

describe('aip apply when HEAD moves under it', () => {
  it('fails with head.moved and names the stored state', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, 'a.txt'), 'a\n');
    const first = await aip(['snapshot', '--title', 'a', '--goal', 'add a'], { cwd: dir });
    expect(first.code).toBe(0);
    const head = /state ([0-9a-f]{64})/.exec(first.text)![1]!;
    await writeFile(join(dir, 'b.txt'), 'b\n');
    const intent = (await aip(['intent', '--title', 'b', '--goal', 'add b'], { cwd: dir })).text.trim();
    const operation = (await aip(['op', '--intent', intent], { cwd: dir })).text.trim();

    const raced = await aip(['apply', operation], {
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
    expect(raced.code).toBe(1);
    expect(raced.text).toBe('');
    const warning = /^aip: warning: HEAD was not moved; the operation's resulting state is stored as state ([0-9a-f]{64}) \(based on ([0-9a-f]{64})\); to move HEAD to it: aip head \1\n/.exec(raced.stderr);
    expect(warning).not.toBeNull();
    const [, state, base] = warning!;
    expect(base).toBe(head);
    expect(raced.stderr.slice(warning![0].length)).toBe(`aip: head.moved: HEAD moved from ${head} to ${ROOT}\n`);

    // The named state is stored and is the operation's resulting state.
    const shown = JSON.parse((await aip(['show', state!], { cwd: dir })).text) as { data: { parents: string[]; operations: string[]; files: Record<string, unknown> } };
    expect(shown.data).toMatchObject({ parents: [head], operations: [operation] });
    expect(Object.keys(shown.data.files)).toContain('b.txt');
    expect((await aip(['head'], { cwd: dir })).text).toBe(`${ROOT}\n`);
    expect((await aip(['head', state!], { cwd: dir })).code).toBe(0);
    expect((await aip(['status'], { cwd: dir })).text).toBe('');
  });
});
