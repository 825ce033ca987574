// `aip verify` (no IDs, or --all) on a damaged `.aip` (D43): index lines that
// are not lines, a HEAD that names no stored state, and a symbolic-link loop
// in an object's place are reported, with exit 1, next to every other object.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { appendFile, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT_STATE_ID } from '../../../src/aip/core/objects.js';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

const execFileAsync = promisify(execFile);

beforeAll(() => requireBuiltBin());

async function ok(args: string[], cwd: string): Promise<string> {
  const result = await aip(args, { cwd });
  expect(result.code, `aip ${args.join(' ')}: ${result.stderr}`).toBe(0);
  return result.text.trim();
}

/** init, one snapshot (HEAD = its state) and one reported evidence about that state. */
async function project(): Promise<{ dir: string; state: string; intent: string; evidence: string }> {
  const dir = await tempDir();
  await ok(['init'], dir);
  await writeFile(join(dir, 'a.txt'), 'a\n');
  const made = JSON.parse(await ok(['--format', 'json', 'snapshot', '--title', 'A', '--goal', 'Add a'], dir)) as Record<string, string>;
  const evidence = await ok(['report', '--kind', 'k', '--command', 'c', '--result', 'pass', '--reporter', 'me'], dir);
  return { dir, state: made['state'] ?? '', intent: made['intent'] ?? '', evidence };
}

const refsFile = (dir: string, target: string): string => join(dir, '.aip', 'index', 'v1', 'refs', target.slice(0, 2), target.slice(2));
const objectFile = (dir: string, id: string): string => join(dir, '.aip', 'objects', id.slice(0, 2), id.slice(2));

interface Report {
  valid: string[];
  invalid: { id: string; code: string; message: string }[];
}

async function verify(dir: string, ...args: string[]): Promise<{ code: number | null; report: Report }> {
  const result = await aip(['--format', 'json', 'verify', ...args], { cwd: dir });
  return { code: result.code, report: JSON.parse(result.text) as Report };
}

describe('index lines that are not lines', () => {
  it('a garbage line appended to an index file is store.index on the file\'s object; index rebuild clears it', async () => {
    const { dir, state } = await project();
    await appendFile(refsFile(dir, state), 'garbage line here\n');
    for (const args of [[], ['--all']]) {
      const { code, report } = await verify(dir, ...args);
      expect(code).toBe(1);
      expect(report.invalid.map((i) => [i.id, i.code])).toEqual([[state, 'store.index']]);
      expect(report.invalid[0]?.message).toContain('"garbage line here"');
    }
    const text = await aip(['verify'], { cwd: dir });
    expect(text.text).toContain(`invalid ${state} store.index: `);
    // Queries still ignore it, and the one-object form does not read the index.
    expect((await aip(['log'], { cwd: dir })).code).toBe(0);
    expect((await verify(dir, state)).code).toBe(0);
    await ok(['index', 'rebuild'], dir);
    expect((await verify(dir)).code).toBe(0);
  });

  it('a torn line is reported; empty and duplicate lines are not (they arise without damage)', async () => {
    const { dir, state, evidence } = await project();
    await appendFile(refsFile(dir, state), `\n${evidence} evidence 1 state\n\n`);
    expect((await verify(dir)).code).toBe(0);
    await appendFile(refsFile(dir, state), `${evidence} evid`);
    const { code, report } = await verify(dir);
    expect(code).toBe(1);
    expect(report.invalid.map((i) => [i.id, i.code])).toEqual([[state, 'store.index']]);
  });

  it('garbage in the index file of an ID that is not stored is reported under that ID', async () => {
    const { dir } = await project();
    const target = 'ab'.padEnd(64, '7');
    await mkdir(join(dir, '.aip', 'index', 'v1', 'refs', 'ab'), { recursive: true });
    await writeFile(refsFile(dir, target), 'not a line\n');
    const { code, report } = await verify(dir);
    expect(code).toBe(1);
    expect(report.invalid.map((i) => [i.id, i.code])).toEqual([[target, 'store.index']]);
  });

  it('a folder in place of an index file: log and refs fail with io naming the file and the remedy', async () => {
    const { dir, state } = await project();
    await rm(refsFile(dir, state));
    await mkdir(refsFile(dir, state));
    for (const args of [['log'], ['refs', state]]) {
      const result = await aip(args, { cwd: dir });
      expect(result.code).toBe(6);
      expect(result.stderr).toContain(`aip: io: the reverse index file ${refsFile(dir, state)} is not a regular file (aip index rebuild`);
    }
    await ok(['index', 'rebuild'], dir);
    expect((await aip(['log'], { cwd: dir })).code).toBe(0);
  });
});

describe('HEAD', () => {
  it('a HEAD that is not an ID, names nothing stored or names another type is reported as HEAD', async () => {
    const { dir, state, intent } = await project();
    const head = join(dir, '.aip', 'HEAD');
    const cases: [string, string][] = [
      ['garbage\n', 'io'],
      [`${'e'.repeat(64)}\n`, 'graph.missing'],
      [`${intent}\n`, 'graph.type'],
    ];
    for (const [content, expected] of cases) {
      await writeFile(head, content);
      const { code, report } = await verify(dir, '--all');
      expect(code, content).toBe(1);
      expect(report.invalid.map((i) => [i.id, i.code])).toEqual([['HEAD', expected]]);
      expect(report.valid).toContain(state); // every object is still verified
      const text = await aip(['verify'], { cwd: dir });
      expect(text.text.split('\n')[0]).toMatch(new RegExp(`^invalid HEAD ${expected.replace('.', '\\.')}: `));
      // Verifying named objects does not look at HEAD.
      expect((await verify(dir, state)).code).toBe(0);
    }
    await rm(head);
    expect((await verify(dir)).report.invalid.map((i) => [i.id, i.code])).toEqual([['HEAD', 'io']]);
  });

  it('an objects folder emptied by hand is not "everything valid"', async () => {
    const { dir } = await project();
    await rm(join(dir, '.aip', 'objects'), { recursive: true });
    await mkdir(join(dir, '.aip', 'objects'));
    const { code, report } = await verify(dir);
    expect(code).toBe(1);
    expect(report.invalid.map((i) => [i.id, i.code])).toEqual([['HEAD', 'graph.missing']]);
  });
});

describe('damage at an object\'s path', () => {
  it('a symbolic-link loop is an io failure of that object and of what references it, not the end of verify', async () => {
    const { dir, state } = await project();
    const path = objectFile(dir, ROOT_STATE_ID);
    await rm(path, { force: true });
    await symlink(path, path);
    const { code, report } = await verify(dir);
    expect(code).toBe(1);
    const codes = new Map(report.invalid.map((i) => [i.id, i.code]));
    expect(codes.get(ROOT_STATE_ID)).toBe('io');
    expect(codes.get(state)).toBe('io');
    expect(report.invalid.find((i) => i.id === ROOT_STATE_ID)?.message).toContain('ELOOP');
  });
});

describe('export of a repository with a missing object', () => {
  it('export --all refuses a reference to an object that is not stored, as export ID does, and leaves no file', async () => {
    const { dir, intent } = await project();
    await rm(objectFile(dir, intent));
    const out = join(dir, 'all.bundle');
    for (const args of [['export', '--all', '-o', out], ['export', '-o', out]]) {
      const result = await aip(args, { cwd: dir });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(new RegExp(`^aip: graph\\.missing: [0-9a-f]{64}: data\\.intents?(\\[0\\])?: ${intent} is not stored\\n$`));
      expect(existsSync(out)).toBe(false);
    }
  });
});

describe('the index completeness marker', () => {
  it('a folder or FIFO in its place means no index: verify and log rebuild it instead of failing with io', async () => {
    for (const make of [(path: string) => mkdir(path), (path: string) => execFileAsync('mkfifo', [path])]) {
      const { dir, evidence } = await project();
      const marker = join(dir, '.aip', 'index', 'v1', 'complete');
      await rm(marker);
      await make(marker);
      expect((await verify(dir)).code).toBe(0);
      expect(await ok(['log'], dir)).toContain(`evidence ${evidence} `);
    }
  });
});
