// `aip index rebuild` recreates the reverse index from the objects alone
// (spec 7.5). An object file that does not hold its object (overwritten, so
// its bytes no longer hash to its name) indexes nothing; the rebuild used to
// skip it silently, so `indexed 5 objects` of 6 stored looked like success
// and the references it holds were missing from every query. Now each
// skipped object is named in a warning on stderr, with its path and why; the
// exit code and stdout are unchanged (D55).
import { chmod, readdir, writeFile } from 'node:fs/promises';
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

describe('aip index rebuild with an unreadable object', () => {
  it('warns on stderr naming the object, its path and why, and still indexes the others', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, 'hello.txt'), 'hello\n');
    const made = await aip(['snapshot', '--title', 'a', '--goal', 'add hello'], { cwd: dir });
    expect(made.code).toBe(0);
    const state = /state ([0-9a-f]{64})/.exec(made.text)![1]!;
    const shown = JSON.parse((await aip(['show', state], { cwd: dir })).text) as { data: { files: Record<string, { artifact: string }> } };
    const artifact = shown.data.files['hello.txt']!.artifact;
    const ids = await storedIds(dir);
    expect(ids).toContain(artifact);
    const path = join(dir, '.aip', 'objects', artifact.slice(0, 2), artifact.slice(2));
    await chmod(path, 0o644);
    await writeFile(path, 'overwritten\n');

    const rebuilt = await aip(['index', 'rebuild'], { cwd: dir });
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.text).toBe(`indexed ${ids.length - 1} objects\n`);
    expect(rebuilt.stderr).toMatch(
      new RegExp(`^aip: warning: object ${artifact} was not indexed: ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} does not hold a valid object \\(store\\.hash: stored bytes hash to [0-9a-f]{64}\\); aip verify --all reports it\\n$`),
    );

    const json = await aip(['--format', 'json', 'index', 'rebuild'], { cwd: dir });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.text)).toEqual({ indexed: ids.length - 1 });
    expect(json.stderr).toContain(`aip: warning: object ${artifact} was not indexed`);
  });
});
