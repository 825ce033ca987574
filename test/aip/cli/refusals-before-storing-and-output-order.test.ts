// Refusals and outputs of `aip` (spec 9.3, docs/aip.md) a script or a user
// reads, checked through the built bin: a snapshot given an --intent that is
// not an intent is refused before anything is stored and names that ID;
// run refuses an empty command name and a zero --output-limit as usage
// errors (exit 2, docs/aip.md), storing nothing; verify --format json lists invalid objects by ID whatever order they were named in.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

async function initialised(): Promise<string> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  return dir;
}

describe('refusals', () => {
  it('snapshot --intent with a state or an artifact is graph.type on that ID (exit 5), storing nothing and leaving HEAD', async () => {
    const dir = await initialised();
    const artifact = (await aip(['put', '--from', 'raw', '-'], { cwd: dir, input: 'x' })).text.trim();
    await writeFile(join(dir, 'a.txt'), 'a\n');
    const head = (await aip(['head'], { cwd: dir })).text.trim();
    const stored = (await aip(['--format', 'json', 'verify'], { cwd: dir })).text;
    for (const [ref, id, type] of [['HEAD', head, 'a state'], [artifact, artifact, 'an artifact']] as const) {
      const refused = await aip(['snapshot', '--intent', ref], { cwd: dir });
      expect([refused.code, refused.text, refused.stderr], ref).toEqual([5, '', `aip: graph.type: ${id} is ${type}, expected an intent\n`]);
    }
    // Nothing of the working tree (a.txt, .aipignore) was stored on the way to the refusal.
    expect((await aip(['--format', 'json', 'verify'], { cwd: dir })).text).toBe(stored);
    expect((await aip(['head'], { cwd: dir })).text).toBe(`${head}\n`);
  });
});

describe('run refusals (docs/aip.md: exit 2 for a value no object may hold; zero is refused)', () => {
  it('an empty or blank command name and a zero --output-limit are usage errors (exit 2) and store no evidence', async () => {
    const dir = await initialised();
    const stored = (await aip(['--format', 'json', 'verify'], { cwd: dir })).text;
    for (const name of ['', ' ']) {
      const refused = await aip(['run', '--', name, 'x'], { cwd: dir });
      expect([refused.code, refused.text, refused.stderr], JSON.stringify(name)).toEqual([2, '', 'aip: usage: the command name must not be empty\n']);
    }
    for (const limit of ['0', '0K', '0G']) {
      const refused = await aip(['run', '--output-limit', limit, '--', 'true'], { cwd: dir });
      expect([refused.code, refused.text, refused.stderr], limit).toEqual([2, '', 'aip: usage: a size of zero is not allowed\n']);
    }
    const zero = await aip(['run', '--timeout', '0ms', '--', 'true'], { cwd: dir });
    expect([zero.code, zero.text, zero.stderr]).toEqual([2, '', 'aip: usage: a duration of zero is not allowed\n']);
    expect((await aip(['--format', 'json', 'verify'], { cwd: dir })).text).toBe(stored);
  });
});

describe('verify --format json', () => {
  it('lists invalid objects sorted by ID, however they were given (D19)', async () => {
    const dir = await initialised();
    const ids: string[] = [];
    for (const content of ['one', 'two', 'three']) ids.push((await aip(['put', '--from', 'raw', '-'], { cwd: dir, input: content })).text.trim());
    // Damaged by hand: the bytes no longer hash to the name they are stored under.
    for (const id of ids) await writeFile(join(dir, '.aip', 'objects', id.slice(0, 2), id.slice(2)), 'garbage');
    const sorted = [...ids].sort();
    const given = [...sorted].reverse();
    const result = await aip(['--format', 'json', 'verify', ...given], { cwd: dir });
    expect(result.code).toBe(1);
    const report = JSON.parse(result.text) as { valid: string[]; invalid: { id: string }[] };
    expect([report.valid, report.invalid.map((i) => i.id)]).toEqual([[], sorted]);
  });
});

describe('import text output', () => {
  it('says how many objects the bundle held, then how many were new', async () => {
    const dir = await initialised();
    await aip(['put', '--from', 'raw', '-'], { cwd: dir, input: 'x' });
    const bundle = (await aip(['export'], { cwd: dir })).stdout;
    // Everything is already here: the root state and the artifact.
    expect(await aip(['import', '-'], { cwd: dir, input: bundle })).toMatchObject({ code: 0, text: 'imported 2 objects (0 new)\n' });
    const other = await initialised();
    expect(await aip(['import', '-'], { cwd: other, input: bundle })).toMatchObject({ code: 0, text: 'imported 2 objects (1 new)\n' });
  });
});
