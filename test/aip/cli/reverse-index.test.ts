// The reverse index as a user meets it through the built `aip` (spec 1, 7.5):
// a deleted, foreign-version or half-built index is rebuilt before `refs`,
// `log` and `verify` read it, a crash mid-rebuild never leaves a partial
// index, and a wrong cache line is dropped by queries and reported by verify.
import { spawn } from 'node:child_process';
import { appendFile, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT_STATE_ID } from '../../../src/aip/core/objects.js';
import { Repository } from '../../../src/aip/repository/repository.js';
import { AIP_BIN, aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

function lines(text: string): string[] {
  return text.trimEnd().split('\n').filter((l) => l !== '');
}

async function ok(args: string[], cwd: string): Promise<string> {
  const result = await aip(args, { cwd });
  expect(result.code, `aip ${args.join(' ')}: ${result.stderr}`).toBe(0);
  return result.text.trim();
}

/** A repository with one snapshot (HEAD = state) and one reported evidence about it. */
async function project(): Promise<{ dir: string; state: string; intent: string; first: string }> {
  const dir = await tempDir();
  await ok(['init'], dir);
  await writeFile(join(dir, 'hello.txt'), 'hello\n');
  const made = JSON.parse(await ok(['--format', 'json', 'snapshot', '--title', 'Add hello', '--goal', 'Create hello.txt'], dir)) as Record<string, string>;
  const first = await ok(['report', '--kind', 'review', '--command', 'read it', '--result', 'pass', '--reporter', 'me'], dir);
  return { dir, state: made['state'] ?? '', intent: made['intent'] ?? '', first };
}

const report = (dir: string, kind: string): Promise<string> => ok(['report', '--kind', kind, '--command', 'c', '--result', 'fail', '--reporter', 'me'], dir);

function indexFile(dir: string, target: string): string {
  return join(dir, '.aip', 'index', 'v1', 'refs', target.slice(0, 2), target.slice(2));
}

async function evidenceInLog(dir: string): Promise<string[]> {
  return lines(await ok(['log'], dir)).filter((l) => l.startsWith('  evidence ')).map((l) => l.split(' ')[3] ?? '');
}

async function refsOf(dir: string, id: string): Promise<string[]> {
  return lines(await ok(['refs', id], dir));
}

describe('a missing or foreign index is rebuilt before it is read or extended', () => {
  it('rm -rf .aip/index, then report: log and refs still see every evidence', async () => {
    const { dir, state, first } = await project();
    await rm(join(dir, '.aip', 'index'), { recursive: true });
    const second = await report(dir, 'test');
    expect((await evidenceInLog(dir)).sort()).toEqual([first, second].sort());
    expect(await refsOf(dir, state)).toEqual([`${first} evidence/1 state`, `${second} evidence/1 state`].sort());
    expect((await aip(['verify'], { cwd: dir })).code).toBe(0);
  });

  it('rm -rf .aip/index, then log: nothing is missing', async () => {
    const { dir, state, first } = await project();
    await rm(join(dir, '.aip', 'index'), { recursive: true });
    expect(await evidenceInLog(dir)).toEqual([first]);
    expect(await refsOf(dir, state)).toEqual([`${first} evidence/1 state`]);
  });

  it('an index holding only an unknown version folder is ignored, removed and rebuilt', async () => {
    const { dir, state, first } = await project();
    await rm(join(dir, '.aip', 'index'), { recursive: true });
    await mkdir(join(dir, '.aip', 'index', 'v2', 'refs'), { recursive: true });
    await writeFile(join(dir, '.aip', 'index', 'v2', 'anything'), 'from a newer aip\n');
    const second = await report(dir, 'test');
    expect(await refsOf(dir, state)).toEqual([`${first} evidence/1 state`, `${second} evidence/1 state`].sort());
    expect(await readdir(join(dir, '.aip', 'index'))).toEqual(['v1']);
  });

  it('an index without its completeness marker (an interrupted build) is rebuilt', async () => {
    const { dir, state, first } = await project();
    await rm(join(dir, '.aip', 'index', 'v1', 'complete'));
    await rm(indexFile(dir, state));
    expect(await evidenceInLog(dir)).toEqual([first]);
    await stat(join(dir, '.aip', 'index', 'v1', 'complete'));
  });

  it('a fresh repository starts with a complete, empty index', async () => {
    const dir = await tempDir();
    await ok(['init'], dir);
    expect(await readdir(join(dir, '.aip', 'index', 'v1'))).toEqual(['complete', 'refs']);
    expect(await readdir(join(dir, '.aip', 'index', 'v1', 'refs'))).toEqual([]);
  });

  it('a crash (SIGKILL) at any moment of aip index rebuild leaves no index or a complete one', { timeout: 120_000 }, async () => {
    const dir = await tempDir();
    const repo = await Repository.init(dir);
    const created = '2026-01-01T00:00:00.000000000Z';
    for (let i = 0; i < 400; i++) {
      const put = await repo.putObject({
        type: 'intent',
        version: 1,
        data: { goal: `goal ${i}`, title: `title ${i}`, context: [ROOT_STATE_ID], parents: [], created_at: created, constraints: [] },
      });
      if (!put.ok) throw put.error;
    }
    const started = Date.now();
    await ok(['index', 'rebuild'], dir);
    const full = Date.now() - started;
    const expected = await refsOf(dir, ROOT_STATE_ID);
    expect(expected).toHaveLength(400);
    for (const fraction of [0.15, 0.3, 0.45, 0.6, 0.75, 0.9]) {
      const child = spawn(process.execPath, [AIP_BIN, 'index', 'rebuild'], { cwd: dir, stdio: 'ignore' });
      const closed = new Promise((settle) => child.on('close', settle));
      await sleep(Math.round(full * fraction));
      child.kill('SIGKILL');
      await closed;
      const marker = await stat(join(dir, '.aip', 'index', 'v1', 'complete')).then(() => true, () => false);
      if (marker) {
        // Marked complete: it must answer fully as it stands (verify checks every line and rebuilds nothing).
        const verify = await aip(['verify'], { cwd: dir });
        expect(verify.code, `after a kill at ${fraction}: ${verify.text.slice(-300)}`).toBe(0);
      }
      expect(await refsOf(dir, ROOT_STATE_ID)).toEqual(expected);
    }
    // A killed build may leave its work folder in .aip/tmp; it is never read, and the next rebuild removes it.
    await ok(['index', 'rebuild'], dir);
    expect((await readdir(join(dir, '.aip', 'tmp'))).filter((n) => n.startsWith('index-'))).toEqual([]);
  });
});

describe('index lines are confirmed against their source objects', () => {
  it('a line naming a stored object of another type is dropped: refs omits it, log works, verify reports it', async () => {
    const { dir, state, intent, first } = await project();
    await appendFile(indexFile(dir, state), `${intent} evidence 1 state\n`);
    expect(await refsOf(dir, state)).toEqual([`${first} evidence/1 state`]);
    const log = await aip(['log'], { cwd: dir });
    expect(log.code).toBe(0);
    expect(lines(log.text).filter((l) => l.startsWith('  evidence '))).toHaveLength(1);
    expect(log.stderr).toContain(`aip: warning: ignoring index line "${intent} evidence 1 state"`);
    const verify = await aip(['verify'], { cwd: dir });
    expect(verify.code).toBe(1);
    expect(verify.text).toContain(`invalid ${intent} store.index: `);
    await ok(['index', 'rebuild'], dir);
    expect((await aip(['verify'], { cwd: dir })).code).toBe(0);
  });

  it('a line whose source does not reference the target in that field (or has another version) is dropped', async () => {
    const { dir, state, first } = await project();
    const aboutRoot = await ok(['report', '--state', ROOT_STATE_ID, '--kind', 'k', '--command', 'c', '--result', 'pass', '--reporter', 'me'], dir);
    await appendFile(indexFile(dir, state), `${aboutRoot} evidence 1 state\n${first} evidence 1 operations\n${first} evidence 2 state\n`);
    const refs = await aip(['refs', state], { cwd: dir });
    expect(lines(refs.text)).toEqual([`${first} evidence/1 state`]);
    expect(lines(refs.stderr)).toHaveLength(3);
    // Newest first: the snapshot's evidence, then the root's own (once: not also under the snapshot).
    expect(await evidenceInLog(dir)).toEqual([first, aboutRoot]);
    const verify = await aip(['--format', 'json', 'verify', '--all'], { cwd: dir });
    expect(verify.code).toBe(1);
    const invalid = (JSON.parse(verify.text) as { invalid: { id: string; code: string }[] }).invalid;
    expect(invalid.map((i) => [i.id, i.code]).sort()).toEqual([[aboutRoot, 'store.index'], [first, 'store.index']].sort());
  });

  it('a line whose source was never stored is dropped silently (a crash between append and rename)', async () => {
    const { dir, state, first } = await project();
    await appendFile(indexFile(dir, state), `${'e'.repeat(64)} evidence 1 state\n`);
    const refs = await aip(['refs', state], { cwd: dir });
    expect(lines(refs.text)).toEqual([`${first} evidence/1 state`]);
    expect(refs.stderr).toBe('');
    expect((await aip(['verify'], { cwd: dir })).code).toBe(0);
  });
});
