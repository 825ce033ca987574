// `aip apply OP` stores the operation's resulting state and moves HEAD only
// when HEAD is the operation's base (spec 9.3); its output is the state ID
// either way. When HEAD stays (the operation was made on another state) it
// now says so on stderr, with the command that would move it; stdout is
// unchanged, and applying when HEAD moves or already is the result says nothing.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

requireBuiltBin();

const ID = /^[0-9a-f]{64}\n$/;

describe('aip apply', () => {
  it('warns when HEAD is not the operation base and stays put', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const root = (await aip(['head'], { cwd: dir })).text.trim();
    await writeFile(join(dir, 'a.txt'), 'a\n');
    const first = (await aip(['snapshot', '--title', 'a', '--goal', 'add a'], { cwd: dir })).text;
    const head = /state ([0-9a-f]{64})/.exec(first)![1]!;

    // An operation on the root state while HEAD is further on.
    await writeFile(join(dir, 'a.txt'), 'b\n');
    const intent = (await aip(['intent', '--title', 'b', '--goal', 'b'], { cwd: dir })).text.trim();
    const op = (await aip(['op', '--intent', intent, '--base', root], { cwd: dir })).text.trim();
    const applied = await aip(['apply', op], { cwd: dir });
    expect(applied.code).toBe(0);
    expect(applied.text).toMatch(ID);
    const state = applied.text.trim();
    expect(applied.stderr).toBe(`aip: warning: HEAD stays at ${head}: the operation's base is ${root}; to move it: aip head ${state}\n`);
    expect((await aip(['head'], { cwd: dir })).text.trim()).toBe(head);

    // An operation on HEAD moves it, silently; applying it again changes nothing and says nothing.
    const onHead = (await aip(['op', '--intent', intent], { cwd: dir })).text.trim();
    const moved = await aip(['apply', onHead], { cwd: dir });
    expect(moved.stderr).toBe('');
    expect((await aip(['head'], { cwd: dir })).text).toBe(moved.text);
    expect((await aip(['apply', onHead], { cwd: dir })).stderr).toBe('');
  });
});
