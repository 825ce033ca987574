// `aip index rebuild` recreates the reverse index from the objects alone
// (spec 7.5). An object file that does not hold its object (overwritten, so
// its bytes no longer hash to its name) indexes nothing; the rebuild used to
// skip it silently, so `indexed 5 objects` of 6 stored looked like success
// and the references it holds were missing from every query. Now each
// skipped object is named in a warning on stderr, with its path and why; the
// exit code and stdout are unchanged (D55).
import { chmod, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

async function storedIds(dir: string): Promise<string[]> {
  const objects = join(dir, '.aip', 'objects');
  const ids: string[] = [];
  for (const prefix of await readdir(objects)) {
    for (const rest of await readdir(join(objects, prefix))) ids.push(prefix + rest);
  }
  return ids;
}

/** A repository with one snapshot, then `id`'s object file overwritten; `pick` chooses the object from the state. */
async function snapshotWithOverwritten(pick: (state: string, shown: { data: { files: Record<string, { artifact: string }>; operations: string[] } }) => string) {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  await writeFile(join(dir, 'hello.txt'), 'hello\n');
  const made = await aip(['snapshot', '--title', 'a', '--goal', 'add hello'], { cwd: dir });
  expect(made.code).toBe(0);
  const state = /state ([0-9a-f]{64})/.exec(made.text)![1]!;
  const shown = JSON.parse((await aip(['show', state], { cwd: dir })).text) as { data: { files: Record<string, { artifact: string }>; operations: string[] } };
  const id = pick(state, shown);
  const ids = await storedIds(dir);
  expect(ids).toContain(id);
  const path = join(dir, '.aip', 'objects', id.slice(0, 2), id.slice(2));
  await chmod(path, 0o644);
  await writeFile(path, 'overwritten\n');
  return { dir, id, path, ids, shown };
}

const notIndexedWarning = (id: string, path: string): RegExp =>
  new RegExp(`^aip: warning: object ${id} was not indexed: ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} does not hold a valid object \\(store\\.hash: stored bytes hash to [0-9a-f]{64}\\); aip verify --all reports it\\n$`);

describe('aip index rebuild with an unreadable object', () => {
  it('warns on stderr naming the object, its path and why, and still indexes the others', async () => {
    const { dir, id: artifact, path, ids } = await snapshotWithOverwritten((_state, shown) => shown.data.files['hello.txt']!.artifact);

    const rebuilt = await aip(['index', 'rebuild'], { cwd: dir });
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.text).toBe(`indexed ${ids.length - 1} objects\n`);
    expect(rebuilt.stderr).toMatch(notIndexedWarning(artifact, path));

    const json = await aip(['--format', 'json', 'index', 'rebuild'], { cwd: dir });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.text)).toEqual({ indexed: ids.length - 1 });
    expect(json.stderr).toContain(`aip: warning: object ${artifact} was not indexed`);
  });

  it('the automatic rebuild of a query that finds no index warns the same way, once', async () => {
    // The state is overwritten, so the operation it was produced by has no
    // valid referrer left; with the index deleted (always safe, spec 7.5) a
    // query rebuilds it first and must not drop the state in silence.
    const { dir, id: state, path, shown } = await snapshotWithOverwritten((id) => id);
    await rm(join(dir, '.aip', 'index'), { recursive: true });
    const operation = shown.data.operations[0]!;
    const queried = await aip(['refs', operation], { cwd: dir });
    expect(queried.code).toBe(0);
    expect(queried.stderr).toMatch(notIndexedWarning(state, path));
    const again = await aip(['refs', operation], { cwd: dir });
    expect(again.stderr).toBe('');
  });
});
