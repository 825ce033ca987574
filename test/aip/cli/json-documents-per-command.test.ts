// With --format json every command prints one JSON document on stdout with the
// keys docs/aip.md ("JSON output for scripts") gives it. Several of them
// (init, head, checkout, log's root entry, export -o) were only read back
// in part or as text, so a renamed key went unnoticed by the tests.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT_STATE_ID } from '../../../src/aip/core/objects.js';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const T0 = '2026-01-01T00:00:00.000000000Z';

describe('aip --format json documents (docs/aip.md)', () => {
  it('init, head, snapshot, log, checkout, export -o, import and index rebuild print the documented keys', async () => {
    const dir = await tempDir();
    const init = await aip(['--format', 'json', 'init'], { cwd: dir });
    expect(init.code).toBe(0);
    expect(JSON.parse(init.text)).toEqual({ repository: join(dir, '.aip'), head: ROOT_STATE_ID });

    expect(JSON.parse((await aip(['--format', 'json', 'head'], { cwd: dir })).text)).toEqual({ head: ROOT_STATE_ID });

    await writeFile(join(dir, 'a.txt'), 'a\n');
    const snap = await aip(['--format', 'json', 'snapshot', '--title', 't', '--goal', 'g', '--created-at', T0], { cwd: dir });
    expect(snap.code).toBe(0);
    const made = JSON.parse(snap.text) as { intent: string; operation: string; state: string };
    expect(Object.keys(made)).toEqual(['intent', 'operation', 'state']);

    // Setting HEAD prints the same document as reading it.
    expect(JSON.parse((await aip(['--format', 'json', 'head', ROOT_STATE_ID], { cwd: dir })).text)).toEqual({ head: ROOT_STATE_ID });
    expect(JSON.parse((await aip(['--format', 'json', 'head', made.state], { cwd: dir })).text)).toEqual({ head: made.state });

    const log = await aip(['--format', 'json', 'log'], { cwd: dir });
    expect(JSON.parse(log.text)).toEqual({
      states: [
        { state: made.state, root: false, operation: made.operation, intent: { id: made.intent, title: 't' }, effects: 2, evidence: [] },
        { state: ROOT_STATE_ID, root: true, evidence: [] },
      ],
    });

    const into = join(dir, 'out');
    const checkout = await aip(['--format', 'json', 'checkout', 'HEAD', '--into', into], { cwd: dir });
    expect(JSON.parse(checkout.text)).toEqual({ path: into, files: 2 });

    const exported = await aip(['--format', 'json', 'export', '-o', 'all.aipb'], { cwd: dir });
    expect(exported.code).toBe(0);
    const count = Number(/^exported (\d+) objects\n$/.exec(exported.stderr)?.[1]);
    expect(JSON.parse(exported.text)).toEqual({ exported: count });
    // To stdout the bundle is the output: no JSON document follows it.
    const toStdout = await aip(['--format', 'json', 'export'], { cwd: dir });
    const bundle = await aip(['export'], { cwd: dir });
    expect(toStdout.stdout.equals(bundle.stdout)).toBe(true);

    const other = await tempDir();
    expect((await aip(['init'], { cwd: other })).code).toBe(0);
    const imported = await aip(['--format', 'json', 'import', join(dir, 'all.aipb')], { cwd: other });
    expect(JSON.parse(imported.text)).toEqual({ imported: count, new: count - 1 });
    expect((await aip(['import', join(dir, 'all.aipb')], { cwd: other })).text).toBe(`imported ${count} objects (0 new)\n`);

    expect(JSON.parse((await aip(['--format', 'json', 'index', 'rebuild'], { cwd: other })).text)).toEqual({ indexed: count });
  });
});
