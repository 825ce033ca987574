// The built `aip` command end to end (spec 9): the documented worked
// example, every command, exit codes, JSON output for scripts, and Ctrl-C
// during `aip run`. Each test spawns dist/src/aip/cli/main.js in a temp folder.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { chmod, lstat, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeBundleHeader } from '../../../src/aip/core/bundle-format.js';
import { objectToJson } from '../../../src/aip/core/json-presentation.js';
import { ROOT_STATE_ID } from '../../../src/aip/core/objects.js';
import { AIP_BIN, aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';
import { ID, OBJECTS, VECTORS, hexToBytes } from '../support/vectors.js';

beforeAll(() => requireBuiltBin());

const execFileAsync = promisify(execFile);

const T0 = '2026-01-01T00:00:00.000000000Z';

async function initialized(): Promise<string> {
  const dir = await tempDir();
  const init = await aip(['init'], { cwd: dir });
  expect(init.code).toBe(0);
  return dir;
}

function lines(text: string): string[] {
  return text.trimEnd().split('\n');
}

describe('the worked example of docs/aip.md', () => {
  it('runs as documented', async () => {
    const dir = await tempDir();
    const init = await aip(['init'], { cwd: dir });
    expect(lines(init.text)).toEqual([`initialized ${dir}/.aip`, `HEAD ${ROOT_STATE_ID}`]);

    await writeFile(join(dir, 'hello.txt'), 'hello\n');
    expect((await aip(['status'], { cwd: dir })).text).toBe('A .aipignore\nA hello.txt\n');

    const snap = await aip(['snapshot', '--title', 'Add a greeting', '--goal', 'Create hello.txt with one line', '--constraint', 'Keep it to one line'], { cwd: dir });
    expect(snap.code).toBe(0);
    const [intentLine, opLine, stateLine] = lines(snap.text);
    expect(intentLine).toMatch(/^intent [0-9a-f]{64}$/);
    expect(opLine).toMatch(/^operation [0-9a-f]{64}$/);
    const state = stateLine?.slice('state '.length) ?? '';
    expect((await aip(['head'], { cwd: dir })).text).toBe(`${state}\n`);
    expect((await aip(['status'], { cwd: dir })).text).toBe('');

    const pass = await aip(['run', '--kind', 'test', '--', 'grep', '-q', 'hello', 'hello.txt'], { cwd: dir });
    expect(pass.code).toBe(0);
    expect(lines(pass.text)[1]).toBe('result pass (termination exited, exit 0, workspace clean)');
    const fail = await aip(['run', '--kind', 'test', '--', 'grep', '-q', 'goodbye', 'hello.txt'], { cwd: dir });
    expect(fail.code).toBe(1);
    expect(lines(fail.text)[1]).toBe('result fail (termination exited, exit 1, workspace clean)');

    const report = await aip(['report', '--kind', 'review', '--command', 'read hello.txt', '--result', 'pass', '--reporter', 'me'], { cwd: dir });
    expect(report.code).toBe(0);
    const decide = await aip(['decide', '--question', 'Keep hello.txt?', '--decision', 'Keep it', '--rationale', 'The test passed', '--related', 'HEAD'], { cwd: dir });
    expect(decide.code).toBe(0);

    const log = lines((await aip(['log'], { cwd: dir })).text);
    expect(log[0]).toBe(`state ${state}`);
    expect(log.filter((l) => l.startsWith('  evidence '))).toHaveLength(3);
    expect(log.at(-1)).toBe(`state ${ROOT_STATE_ID} (root)`);

    const verify = await aip(['verify'], { cwd: dir });
    expect(verify.code).toBe(0);
    expect(lines(verify.text).at(-1)).toMatch(/^\d+ verified, 0 invalid$/);

    const exported = await aip(['export', '-o', 'project.aipb'], { cwd: dir });
    expect(exported.stderr).toMatch(/^exported \d+ objects\n$/);
    const other = await initialized();
    const imported = await aip(['import', join(dir, 'project.aipb')], { cwd: other });
    expect(imported.text).toMatch(/^imported \d+ objects \(\d+ new\)\n$/);
    expect((await aip(['show', state], { cwd: other })).code).toBe(0);
  });
});

describe('objects in and out', () => {
  it('put stores canonical CBOR, JSON presentations and raw bytes; cat gives bytes back', async () => {
    const dir = await initialized();
    const v2 = VECTORS.positive.find((v) => v.n === 'V2');
    const put = await aip(['put', '-'], { cwd: dir, input: hexToBytes(v2?.hex ?? '') });
    expect(put.text).toBe(`${ID.V2}\n`);
    const raw = await aip(['put', '--from', 'raw'], { cwd: dir, input: '' });
    expect(raw.text).toBe(`${ID.V3}\n`);
    await writeFile(join(dir, 'intent.json'), '{"type":"intent","version":1,"data":{"goal":"Create hello.txt containing one line of greeting","title":"Add a greeting","context":[],"parents":[],"created_at":"2026-01-01T00:00:00.000000000Z","constraints":["Keep it to one line","Use a trailing newline"]}}');
    const json = await aip(['--format', 'json', 'put', '--from', 'json', 'intent.json'], { cwd: dir });
    expect(JSON.parse(json.text)).toMatchObject({ id: ID.V4, type: 'intent', version: 1 });

    const cat = await aip(['cat', ID.V4], { cwd: dir });
    expect(cat.stdout.toString('hex')).toBe(VECTORS.positive.find((v) => v.n === 'V4')?.hex);
    expect((await aip(['cat', '--content', ID.V2.slice(0, 6)], { cwd: dir })).text).toBe('hello\n');
    const show = await aip(['show', ID.V2], { cwd: dir });
    expect(show.text).toBe(`{\n  "id": "${ID.V2}",\n  "type": "artifact",\n  "version": 1,\n  "data": {\n    "kind": "file",\n    "content": "aGVsbG8K"\n  }\n}\n`);
  });

  it('rejects invalid objects with exit 5 and the error code, storing nothing', async () => {
    const dir = await initialized();
    for (const name of ['N2', 'N9', 'N13', 'N17', 'N29']) {
      const vector = VECTORS.negative.find((v) => v.n === name);
      const put = await aip(['put'], { cwd: dir, input: hexToBytes(vector?.hex ?? '') });
      expect(put.code, name).toBe(5);
      expect(put.stderr, name).toMatch(new RegExp(`^aip: ${vector?.code.replace('.', '\\.')}: `));
    }
    const json = await aip(['put', '--format', 'json'], { cwd: dir, input: hexToBytes(VECTORS.negative[0]?.hex ?? '') });
    expect(JSON.parse(json.text)).toEqual({ error: { code: 'cbor.key_order', message: expect.any(String) as string } });
    const verify = await aip(['--format', 'json', 'verify'], { cwd: dir });
    expect(JSON.parse(verify.text)).toEqual({ valid: [ROOT_STATE_ID], invalid: [] });
    const twice = await aip(['verify', 'HEAD', ROOT_STATE_ID, ROOT_STATE_ID.slice(0, 8)], { cwd: dir });
    expect(twice.text).toBe(`ok ${ROOT_STATE_ID} state/1\n1 verified, 0 invalid\n`);
    // IDs given out of order come back sorted by ID in both forms (D19).
    const other = (await aip(['put', '--from', 'raw'], { cwd: dir, input: 'hello' })).text.trim();
    const [low, high] = [ROOT_STATE_ID, other].sort() as [string, string];
    const jsonOrder = await aip(['--format', 'json', 'verify', high, low], { cwd: dir });
    expect(JSON.parse(jsonOrder.text)).toEqual({ valid: [low, high], invalid: [] });
    const textOrder = await aip(['verify', high, low], { cwd: dir });
    expect(textOrder.text.split('\n').slice(0, 2).map((line) => line.split(' ')[1])).toEqual([low, high]);
  });

  it('put and import replace a corrupt stored object and print a warning (spec 7.4 step 1)', async () => {
    const dir = await initialized();
    const id = (await aip(['put', '--from', 'raw'], { cwd: dir, input: 'hello' })).text.trim();
    const file = join(dir, '.aip', 'objects', id.slice(0, 2), id.slice(2));
    const good = await readFile(file);
    const corrupt = async (): Promise<void> => {
      await chmod(file, 0o644);
      await writeFile(file, 'garbage');
    };
    const warning = `aip: warning: object ${id} was corrupt (store.hash); rewriting it\n`;
    await corrupt();
    const put = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'hello' });
    expect([put.code, put.text, put.stderr]).toEqual([0, `${id}\n`, warning]);
    expect(await readFile(file)).toEqual(good);
    expect((await lstat(file)).mode & 0o777).toBe(0o444);
    const bundle = join(await tempDir(), 'b.aip');
    expect((await aip(['export', id, '-o', bundle], { cwd: dir })).code).toBe(0);
    await corrupt();
    const imported = await aip(['import', bundle], { cwd: dir });
    expect([imported.code, imported.stderr]).toEqual([0, warning]);
    expect(await readFile(file)).toEqual(good);
    // An intact object is left alone, silently.
    expect((await aip(['put', '--from', 'raw'], { cwd: dir, input: 'hello' })).stderr).toBe('');
  });

  it('put replaces a link, a FIFO or an empty folder under an object\'s name with a warning, and names a full folder it cannot replace', async () => {
    const dir = await initialized();
    const id = (await aip(['put', '--from', 'raw'], { cwd: dir, input: 'hello' })).text.trim();
    const file = join(dir, '.aip', 'objects', id.slice(0, 2), id.slice(2));
    const good = await readFile(file);
    const occupants: [string, () => Promise<void>][] = [
      ['a link to /dev/zero', () => symlink('/dev/zero', file)],
      ['a FIFO', () => execFileAsync('mkfifo', [file]).then(() => undefined)],
      ['an empty folder', () => mkdir(file)],
    ];
    for (const [name, occupy] of occupants) {
      await rm(file, { force: true, recursive: true });
      await occupy();
      const put = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'hello' });
      expect([put.code, put.text, put.stderr], name).toEqual([0, `${id}\n`, `aip: warning: object ${id} was corrupt (io); rewriting it\n`]);
      expect(await readFile(file), name).toEqual(good);
    }
    await rm(file, { force: true });
    await mkdir(file);
    await writeFile(join(file, 'kept'), 'x');
    const refused = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'hello' });
    expect([refused.code, refused.stderr]).toEqual([6, `aip: io: cannot write object ${id}: ${file} is a folder holding files; remove it\n`]);
    expect(await readFile(join(file, 'kept'), 'utf8')).toBe('x');
  });

  it('put and import refuse an object above max_object_bytes as cbor.too_large, exit 5, storing nothing', async () => {
    const roomy = await initialized();
    const content = Buffer.alloc(1_100_000, 0x61);
    const id = (await aip(['put', '--from', 'raw'], { cwd: roomy, input: content })).text.trim();
    const bytes = (await aip(['cat', id], { cwd: roomy })).stdout;
    const bundle = join(await tempDir(), 'big.aip');
    expect((await aip(['export', id, '-o', bundle], { cwd: roomy })).code).toBe(0);

    const small = await initialized();
    await writeFile(join(small, '.aip', 'config.json'), '{"format":"aip-repository","version":1,"max_object_bytes":1048576}');
    const put = await aip(['put'], { cwd: small, input: bytes });
    expect([put.code, put.text]).toEqual([5, '']);
    expect(put.stderr).toBe('aip: cbor.too_large: input exceeds 1048576 bytes\n');
    const imported = await aip(['import', bundle], { cwd: small });
    expect([imported.code, imported.text]).toEqual([5, '']);
    expect(imported.stderr).toBe(`aip: cbor.too_large: item 2 (object 1 of 1): ${bytes.length} bytes exceed max_object_bytes 1048576\n`);
    // A declared length above 2^53-1 is named exactly, not as the nearest double.
    const huge = join(await tempDir(), 'huge.aip');
    await writeFile(huge, Buffer.concat([encodeBundleHeader(1), Buffer.from('5b7fffffffffffffff', 'hex')]));
    const hugeImport = await aip(['import', huge], { cwd: small });
    expect([hugeImport.code, hugeImport.stderr]).toEqual([5, 'aip: cbor.too_large: item 2 (object 1 of 1): 9223372036854775807 bytes exceed max_object_bytes 1048576\n']);
    const raw = await aip(['put', '--from', 'raw'], { cwd: small, input: content });
    expect([raw.code, raw.stderr]).toEqual([5, `aip: cbor.too_large: input exceeds ${1048576 - 53} bytes\n`]);
    expect((await aip(['verify'], { cwd: small })).text).toBe(`ok ${ROOT_STATE_ID} state/1\n1 verified, 0 invalid\n`);
  });

  it('put --from json takes an optional id but refuses one that is not the computed ID: object.id, exit 5 (spec 9.4)', async () => {
    const dir = await initialized();
    const shown = JSON.parse((await aip(['show', 'HEAD'], { cwd: dir })).text) as Record<string, unknown>;
    const wrong = `${ROOT_STATE_ID.startsWith('0') ? '1' : '0'}${ROOT_STATE_ID.slice(1)}`;
    const refused = await aip(['put', '--from', 'json'], { cwd: dir, input: JSON.stringify({ ...shown, id: wrong }) });
    expect([refused.code, refused.text, refused.stderr]).toEqual([5, '', `aip: object.id: the given id ${wrong} differs from the computed ID ${ROOT_STATE_ID}\n`]);
    const { id: _omitted, ...withoutId } = shown;
    for (const input of [JSON.stringify(shown), JSON.stringify(withoutId)]) {
      expect((await aip(['put', '--from', 'json'], { cwd: dir, input })).text).toBe(`${ROOT_STATE_ID}\n`);
    }
  });

  it('put --from json refuses input that is not UTF-8 as object.envelope, exit 5, storing nothing', async () => {
    const dir = await initialized();
    const put = await aip(['put', '--from', 'json', '-'], { cwd: dir, input: Buffer.from([0xff, 0x7b, 0x7d]) });
    expect([put.code, put.stderr, put.text]).toEqual([5, 'aip: object.envelope: the JSON input is not valid UTF-8\n', '']);
    const json = await aip(['--format', 'json', 'put', '--from', 'json'], { cwd: dir, input: Buffer.from([0x7b, 0xc3, 0x7d]) });
    expect([json.code, json.text]).toEqual([5, '{"error":{"code":"object.envelope","message":"the JSON input is not valid UTF-8"}}\n']);
    expect((await aip(['verify'], { cwd: dir })).text).toBe(`ok ${ROOT_STATE_ID} state/1\n1 verified, 0 invalid\n`);
  });

  it('reports an empty argv (a field rule) before a whitespace kind: schema.argv, exit 5', async () => {
    const dir = await initialized();
    const presented = JSON.parse(objectToJson(ID.V9, OBJECTS.V9)) as { id?: string; data: Record<string, unknown> };
    delete presented.id;
    presented.data['argv'] = [];
    presented.data['kind'] = ' ';
    await writeFile(join(dir, 'evidence.json'), JSON.stringify(presented));
    const put = await aip(['put', '--from', 'json', 'evidence.json'], { cwd: dir });
    expect(put.code).toBe(5);
    expect(put.stderr).toMatch(/^aip: schema\.argv: data\.argv: /);
  });
});

describe('exit codes', () => {
  it('2 for usage errors', async () => {
    const dir = await initialized();
    const unknown = await aip(['snapshot', '--bogus'], { cwd: dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^aip: usage: /);
    expect((await aip(['run', '--timeout', '0', '--', 'true'], { cwd: dir })).code).toBe(2);
    expect((await aip(['run', '--output-limit', '1T', '--', 'true'], { cwd: dir })).code).toBe(2);
    expect((await aip(['intent', '--title', 'x', '--goal', ' '], { cwd: dir })).code).toBe(2);
    expect((await aip(['intent', '--title', 'x', '--goal', 'y', '--created-at', '2026-01-01'], { cwd: dir })).code).toBe(2);
    expect((await aip(['show', 'abc'], { cwd: dir })).code).toBe(2);
    // An explicit empty reporter is refused like any empty text option, not recorded as 'unknown'.
    const noReporter = await aip(['report', '--kind', 'k', '--command', 'c', '--result', 'pass', '--reporter', ''], { cwd: dir });
    expect(noReporter.code).toBe(2);
    expect(noReporter.stderr).toBe('aip: usage: --reporter must contain a non-whitespace character\n');
    // Operations named and none asked for: refused rather than one of them quietly ignored.
    const both = await aip(['report', '--kind', 'k', '--command', 'c', '--result', 'pass', '--operation', 'HEAD', '--no-operations'], { cwd: dir });
    expect([both.code, both.stderr]).toEqual([2, 'aip: usage: --operation and --no-operations cannot be used together\n']);
    expect((await aip(['--format', 'yaml', 'head'], { cwd: dir })).code).toBe(2);
    const help = await aip(['--help'], { cwd: dir });
    expect(help.code).toBe(0);
    expect(help.text).toContain('snapshot');
    // The version, as aipcs and aigpt print theirs: the bare package version.
    const pkg = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      expect(await aip([flag], { cwd: dir }), flag).toMatchObject({ code: 0, text: `${pkg.version}\n`, stderr: '' });
    }
  });

  it('2 for an empty path, which named the current folder (--repo "" turned off the search, init nested a repository)', async () => {
    const dir = await initialized();
    const sub = join(dir, 'sub');
    await mkdir(sub);
    const cases: [string[], string][] = [
      [['--repo', '', 'status'], '--repo'],
      [['--repo', '', 'init'], '--repo'],
      [['init', ''], 'DIR'],
      [['put', ''], 'FILE'],
      [['import', ''], 'FILE'],
      [['export', '-o', ''], '--output'],
      [['checkout', 'HEAD', '--into', ''], '--into'],
    ];
    for (const [args, what] of cases) {
      expect(await aip(args, { cwd: sub }), args.join(' ')).toMatchObject({ code: 2, stderr: `aip: usage: ${what} must not be empty\n` });
    }
    expect(await stat(join(sub, '.aip')).catch(() => undefined)).toBeUndefined();
    expect((await aip(['status'], { cwd: sub })).code).toBe(0);
    // A usage error, before the repository is looked for (none above this folder).
    const outside = await tempDir();
    for (const [args, what] of cases.filter(([args]) => args[0] !== 'init' && args[1] !== 'init')) {
      expect(await aip(args, { cwd: outside }), args.join(' ')).toMatchObject({ code: 2, stderr: `aip: usage: ${what} must not be empty\n` });
    }
  });

  it('2 with a plain message when no command (or no index subcommand) is given', async () => {
    const dir = await initialized();
    for (const args of [[], ['index'], ['--format', 'json']]) {
      const missing = await aip(args, { cwd: dir });
      expect(missing.code, args.join(' ')).toBe(2);
      expect(missing.stderr).toMatch(/\naip: usage: missing command\n$/);
      expect(missing.stderr).not.toContain('outputHelp');
    }
    // A help flag after an unknown command does not make it a help page.
    for (const args of [['help', 'bogus'], ['--repo', dir, 'index', 'help', 'bogus'], ['bogus', '--help'], ['index', 'bogus', '-h']]) {
      const unknown = await aip(args, { cwd: dir });
      expect(unknown.code, args.join(' ')).toBe(2);
      expect(unknown.stderr).toMatch(/(^|\n)aip: usage: unknown command 'bogus'\n$/);
    }
    const helped = await aip(['help', 'index'], { cwd: dir });
    expect(helped.code).toBe(0);
    expect(helped.text).toContain('rebuild');
  });

  it('3 for a missing repository or object', async () => {
    const empty = await tempDir();
    const noRepo = await aip(['head'], { cwd: empty });
    expect(noRepo.code).toBe(3);
    expect(noRepo.stderr).toMatch(/^aip: repo\.not_found: /);
    const dir = await initialized();
    expect((await aip(['show', '0123456789'], { cwd: dir })).code).toBe(3);
    // The error document follows the format in effect: the last --format given.
    const json = { error: { code: 'store.not_found', message: 'no object matches 0123456789' } };
    const cases: [string[], string][] = [
      [['--format', 'json', '--format', 'text', 'show'], ''],
      [['--format=text', '--format', 'json', 'show'], `${JSON.stringify(json)}\n`],
      [['--format', 'text', 'show', '--format=json'], `${JSON.stringify(json)}\n`],
    ];
    for (const [args, out] of cases) {
      const shown = await aip([...args, '0123456789'], { cwd: dir });
      expect(shown.code, args.join(' ')).toBe(3);
      expect(shown.text, args.join(' ')).toBe(out);
    }
  });

  it('1 when verify finds invalid objects, 5 for a wrong-type argument', async () => {
    const dir = await initialized();
    const put = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'x' });
    const id = put.text.trim();
    const file = join(dir, '.aip', 'objects', id.slice(0, 2), id.slice(2));
    await chmod(file, 0o644);
    await writeFile(file, 'tampered');
    const verify = await aip(['verify'], { cwd: dir });
    expect(verify.code).toBe(1);
    expect(verify.text).toContain(`invalid ${id} store.hash: `);
    expect((await aip(['log', ROOT_STATE_ID.slice(0, 10)], { cwd: dir })).code).toBe(0);
    const intent = await aip(['intent', '--title', 't', '--goal', 'g'], { cwd: dir });
    const wrongType = await aip(['log', intent.text.trim()], { cwd: dir });
    expect(wrongType.code).toBe(5);
    expect(wrongType.stderr).toBe(`aip: graph.type: ${intent.text.trim()} is an intent, expected a state\n`);
    const parent = await aip(['intent', '--title', 't', '--goal', 'g', '--parent', ROOT_STATE_ID], { cwd: dir });
    expect(parent.code).toBe(5);
    expect(parent.stderr).toContain(`data.parents[0]: ${ROOT_STATE_ID} is a state, expected an intent`);
  });

  it('5 (graph.missing) when log reaches a reference that is not stored, not 3 as for an unknown ID', async () => {
    const dir = await initialized();
    await writeFile(join(dir, 'f'), 'f\n');
    const made = await aip(['--format', 'json', 'snapshot', '--title', 't', '--goal', 'g'], { cwd: dir });
    const { operation, state } = JSON.parse(made.text) as { operation: string; state: string };
    await rm(join(dir, '.aip', 'objects', operation.slice(0, 2), operation.slice(2)));
    const log = await aip(['log'], { cwd: dir });
    expect(log.code).toBe(5);
    expect(log.stderr).toBe(`aip: graph.missing: ${state}: data.operations[0]: ${operation} is not stored\n`);
  });

  it('log prints the states it reached before a broken link, then the error; --format json prints only the error', async () => {
    const dir = await initialized();
    const snapshot = async (content: string): Promise<{ operation: string; state: string }> => {
      await writeFile(join(dir, 'f'), content);
      const made = await aip(['--format', 'json', 'snapshot', '--title', 't', '--goal', 'g'], { cwd: dir });
      return JSON.parse(made.text) as { operation: string; state: string };
    };
    const first = await snapshot('1\n');
    const second = await snapshot('2\n');
    await rm(join(dir, '.aip', 'objects', first.operation.slice(0, 2), first.operation.slice(2)));
    const log = await aip(['log'], { cwd: dir });
    expect(log.code).toBe(5);
    expect(lines(log.text)).toEqual([`state ${second.state}`, `  operation ${second.operation}`, expect.stringMatching(/^  intent [0-9a-f]{64} t$/), '  effects 1']);
    expect(log.stderr).toBe(`aip: graph.missing: ${first.state}: data.operations[0]: ${first.operation} is not stored\n`);
    const json = await aip(['--format', 'json', 'log'], { cwd: dir });
    expect(json.code).toBe(5);
    expect(JSON.parse(json.text)).toEqual({ error: { code: 'graph.missing', message: `${first.state}: data.operations[0]: ${first.operation} is not stored` } });
  });

  it('4 for an unknown run result and 1 for a refused init', async () => {
    const dir = await initialized();
    const run = await aip(['run', '--timeout', '100ms', '--', 'sleep', '5'], { cwd: dir });
    expect(run.code).toBe(4);
    expect(lines(run.text)[1]).toBe('result unknown (termination timeout, exit -, workspace clean)');
    expect((await aip(['init'], { cwd: dir })).code).toBe(1);
  });

  it('130 on Ctrl-C during aip run, with the evidence stored', async () => {
    const dir = await initialized();
    const child = spawn(process.execPath, [AIP_BIN, 'run', '--tee', '--', 'sh', '-c', 'echo ready; exec sleep 30'], { cwd: dir });
    let out = '';
    let interrupted = false;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!interrupted && out.includes('ready')) {
        interrupted = true;
        child.kill('SIGINT');
      }
    });
    const code = await new Promise<number | null>((settle) => child.on('close', settle));
    expect(code).toBe(130);
    const evidenceLine = lines(out).find((l) => l.startsWith('evidence '));
    expect(lines(out).at(-1)).toBe('result unknown (termination cancelled, exit -, workspace clean)');
    const shown = await aip(['--format', 'json', 'show', evidenceLine?.slice(9) ?? ''], { cwd: dir });
    expect(JSON.parse(shown.text)).toMatchObject({ data: { termination: 'cancelled', error: 'cancelled by SIGINT' } });
  });
});

describe('commands', () => {
  it('intent, op, apply, head, checkout, refs and index rebuild', async () => {
    const dir = await initialized();
    await writeFile(join(dir, 'a.txt'), 'A\n');
    const intent = (await aip(['intent', '--title', 'Add a', '--goal', 'Add a.txt', '--created-at', T0], { cwd: dir })).text.trim();
    const op = await aip(['--format', 'json', 'op', '--intent', intent], { cwd: dir });
    const operation = JSON.parse(op.text) as { id: string; data: { effects: unknown[]; base_state: string } };
    expect(operation.data.base_state).toBe(ROOT_STATE_ID);
    expect(operation.data.effects).toHaveLength(2);
    expect((await aip(['head'], { cwd: dir })).text.trim()).toBe(ROOT_STATE_ID);
    const applied = (await aip(['apply', operation.id], { cwd: dir })).text.trim();
    expect((await aip(['head'], { cwd: dir })).text.trim()).toBe(applied);
    expect((await aip(['refs', operation.id], { cwd: dir })).text).toBe(`${applied} state/1 operations\n`);

    const into = join(await tempDir(), 'copy');
    const checkout = await aip(['checkout', applied, '--into', into], { cwd: dir });
    expect(checkout.text).toBe(`${into}\n`);
    expect(await readFile(join(into, 'a.txt'), 'utf8')).toBe('A\n');
    expect((await aip(['checkout', applied, '--into', into], { cwd: dir })).code).toBe(2);

    expect((await aip(['head', ROOT_STATE_ID], { cwd: dir })).text.trim()).toBe(ROOT_STATE_ID);
    expect((await aip(['head', intent], { cwd: dir })).code).toBe(5);
    expect((await aip(['op', '--intent', intent, '--base', ROOT_STATE_ID], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, 'a.txt'), 'A\n');
    expect((await aip(['--format', 'json', 'status'], { cwd: dir })).text).toBe('{"changes":[{"path":".aipignore","change":"A"},{"path":"a.txt","change":"A"}]}\n');

    expect((await aip(['index', 'rebuild'], { cwd: dir })).text).toMatch(/^indexed \d+ objects\n$/);
    expect((await aip(['refs', operation.id], { cwd: dir })).text).toBe(`${applied} state/1 operations\n`);
  });

  it('refs --format json prints {"refs":[...]} with source, type, version and field (D19)', async () => {
    const dir = await initialized();
    await writeFile(join(dir, 'a.txt'), 'A\n');
    const made = JSON.parse((await aip(['--format', 'json', 'snapshot', '--title', 't', '--goal', 'g'], { cwd: dir })).text) as Record<string, string>;
    const refs = await aip(['refs', made['operation'] ?? '', '--format', 'json'], { cwd: dir });
    expect(refs.code).toBe(0);
    expect(refs.text).toBe(`{"refs":[{"source":"${made['state']}","type":"state","version":1,"field":"operations"}]}\n`);
    const none = await aip(['--format', 'json', 'refs', made['state'] ?? ''], { cwd: dir });
    expect([none.code, none.text]).toEqual([0, '{"refs":[]}\n']);
  });

  it('checkout --into a path that is a file or a folder with files is a usage error (exit 2) naming --into and it, and writes nothing', async () => {
    const dir = await initialized();
    const file = join(dir, 'a.txt');
    await writeFile(file, 'A\n');
    const checkout = await aip(['checkout', 'HEAD', '--into', file], { cwd: dir });
    expect([checkout.code, checkout.stderr, checkout.text]).toEqual([2, `aip: usage: --into ${file} is not a folder\n`, '']);
    expect(await readFile(file, 'utf8')).toBe('A\n');
    const full = await aip(['checkout', 'HEAD', '--into', dir], { cwd: dir });
    expect([full.code, full.stderr, full.text]).toEqual([2, `aip: usage: --into ${dir} is not empty; checkout writes only into a new or empty folder\n`, '']);
  });

  it('checkout writes files within the umask, as git does (umask 077: 0700 and 0600)', async () => {
    const dir = await initialized();
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\n');
    await chmod(join(dir, 'run.sh'), 0o755);
    await writeFile(join(dir, 'notes.txt'), 'private\n');
    expect((await aip(['snapshot', '--title', 't', '--goal', 'g'], { cwd: dir })).code).toBe(0);
    const into = join(await tempDir(), 'out');
    const privately = { cwd: dir, nodeArgs: ['--import', 'data:text/javascript,process.umask(0o077)'] };
    expect((await aip(['checkout', 'HEAD', '--into', into], privately)).code).toBe(0);
    const modes = await Promise.all(['run.sh', 'notes.txt'].map(async (name) => (await lstat(join(into, name))).mode & 0o777));
    expect(modes).toEqual([0o700, 0o600]);
  });

  it('snapshot refuses an empty diff unless allowed, and prints JSON for scripts', async () => {
    const dir = await initialized();
    const first = await aip(['--format', 'json', 'snapshot', '--title', 't', '--goal', 'g'], { cwd: dir });
    const made = JSON.parse(first.text) as Record<string, string>;
    expect(Object.keys(made)).toEqual(['intent', 'operation', 'state']);
    const empty = await aip(['snapshot', '--intent', made['intent'] ?? ''], { cwd: dir });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/^aip: operation\.empty: /);
    expect((await aip(['snapshot', '--intent', made['intent'] ?? '', '--allow-empty'], { cwd: dir })).code).toBe(0);
    // Intent options belong to a new intent: with --intent they are refused, not dropped.
    for (const extra of [['--title', 'x'], ['--constraint', 'c'], ['--context', made['intent'] ?? ''], ['--parent', made['intent'] ?? ''], ['--created-at', '2026-01-01T00:00:00.000000000Z']]) {
      const mixed = await aip(['snapshot', '--intent', made['intent'] ?? '', '--allow-empty', ...extra], { cwd: dir });
      expect(mixed.code, extra.join(' ')).toBe(2);
      expect(mixed.stderr).toMatch(/^aip: usage: give --intent or --title\/--goal/);
    }
  });

  it('run --format json prints the evidence; --keep keeps the folder', async () => {
    const dir = await initialized();
    const run = await aip(['--format', 'json', 'run', '--keep', '--output-limit', '3', '--', 'echo', 'hello'], { cwd: dir });
    const evidence = JSON.parse(run.text) as { type: string; version: number; data: Record<string, unknown> };
    expect(evidence).toMatchObject({ type: 'evidence', version: 2, data: { argv: ['echo', 'hello'], output_limit: 3, stdout: { truncated: true }, operations: [] } });
    expect(run.stderr).toMatch(/^\/.*aip-run-[^/\n]+\n$/);
    expect((await stat(run.stderr.trim())).isDirectory()).toBe(true);
    await rm(run.stderr.trim(), { recursive: true, force: true });
    // In text mode the folder's path alone is the last line on stdout (spec §8 step 11).
    const text = await aip(['run', '--keep', '--', 'true'], { cwd: dir });
    const lines = text.stdout.toString().trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^evidence [0-9a-f]{64}$/);
    expect(lines[1]).toMatch(/^result pass /);
    expect((await stat(lines[2] ?? '')).isDirectory()).toBe(true);
    await rm(lines[2] ?? '', { recursive: true, force: true });
  });

  it('run works in a repository whose max_object_bytes leaves no room for the default 1 MiB output limit', async () => {
    const dir = await initialized();
    await writeFile(join(dir, '.aip', 'config.json'), '{"format":"aip-repository","version":1,"max_object_bytes":1048576}\n');
    const run = await aip(['--format', 'json', 'run', '--', 'true'], { cwd: dir });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.text)).toMatchObject({ data: { output_limit: 1048576 - 64, result: 'pass' } });
    await writeFile(join(dir, '.aip', 'config.json'), '{"format":"aip-repository","version":1,"max_object_bytes":1048576,"run":{"output_limit":1048576}}\n');
    const refused = await aip(['head'], { cwd: dir });
    expect(refused.code).toBe(6);
    expect(refused.stderr).toMatch(/^aip: repo\.config: /);
  });

  it('init honours --repo as the project root', async () => {
    const dir = await tempDir();
    const init = await aip(['--repo', 'project', 'init'], { cwd: dir });
    expect(init.code).toBe(0);
    expect(init.text).toBe(`initialized ${join(dir, 'project', '.aip')}\nHEAD ${ROOT_STATE_ID}\n`);
    await expect(lstat(join(dir, '.aip'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await aip(['--repo', 'project', 'init', './project'], { cwd: dir })).code).toBe(1); // the same folder: it exists
    const both = await aip(['--repo', 'project', 'init', 'other'], { cwd: dir });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^aip: usage: /);
  });

  it('export of chosen IDs writes their closure to stdout', async () => {
    const dir = await initialized();
    const put = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'x' });
    const bundle = await aip(['export', put.text.trim()], { cwd: dir });
    expect(bundle.stderr).toBe('exported 1 objects\n');
    const other = await initialized();
    const imported = await aip(['--format', 'json', 'import', '-'], { cwd: other, input: bundle.stdout });
    expect(JSON.parse(imported.text)).toEqual({ imported: 1, new: 1 });
    const bad = await aip(['import', '-'], { cwd: other, input: Buffer.concat([bundle.stdout, Buffer.from([0])]) });
    expect(bad.code).toBe(5);
  });

  it('export to a file in JSON mode prints one document on stdout', async () => {
    const dir = await initialized();
    const json = await aip(['--format', 'json', 'export', '-o', 'all.aipb'], { cwd: dir });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.text)).toEqual({ exported: 1 });
    expect(json.stderr).toBe('exported 1 objects\n');
    const text = await aip(['export', '-o', 'again.aipb'], { cwd: dir });
    expect(text.text).toBe('');
  });

  it('a folder given as input is an io error naming it', async () => {
    const dir = await initialized();
    for (const args of [['put', '.aip'], ['put', '--from', 'raw', '.aip'], ['import', '.aip']]) {
      const folder = await aip(args, { cwd: dir });
      expect(folder.code, args.join(' ')).toBe(6);
      expect(folder.stderr, args.join(' ')).toBe('aip: io: EISDIR .aip (illegal operation on a directory)\n');
    }
  });

  it('names a path a report --cwd cannot take and says why', async () => {
    const dir = await initialized();
    const report = ['report', '--kind', 'k', '--command', 'c', '--result', 'pass', '--cwd'];
    for (const [cwd, why] of [['.aip/x', 'is under the top-level .aip'], ['/abs', 'is absolute'], ['a/../b', 'has a . or .. component']] as const) {
      const refused = await aip([...report, cwd], { cwd: dir });
      expect(refused.code, cwd).toBe(2);
      expect(refused.stderr).toBe(`aip: usage: --cwd must be . or a relative path inside the project: ${JSON.stringify(cwd)} ${why}\n`);
    }
    expect((await aip([...report, 'a/.aip/x'], { cwd: dir })).code).toBe(0);
  });

  it('an input FILE that is a FIFO is read only up to the limit, not to its end', async () => {
    const dir = await initialized();
    await writeFile(join(dir, '.aip', 'config.json'), '{"format":"aip-repository","version":1,"max_object_bytes":1048576}\n');
    for (const args of [['put'], ['put', '--from', 'raw'], ['put', '--from', 'json']]) {
      // A FIFO reports size 0, so the size check before reading let readFile buffer all of it.
      const fifo = join(dir, 'fifo');
      await rm(fifo, { force: true });
      await execFileAsync('mkfifo', [fifo]);
      const writer = spawn('sh', ['-c', 'head -c 8000000 /dev/zero > fifo'], { cwd: dir, stdio: 'ignore' });
      const result = await aip([...args, 'fifo'], { cwd: dir });
      writer.kill();
      expect(result.code, args.join(' ')).toBe(5);
      expect(result.stderr, args.join(' ')).toMatch(/^aip: cbor\.too_large: fifo: more than \d+ bytes\n$/);
    }
  });

  it('export to a path that cannot be written is an io error (exit 6), not a crash', async () => {
    const dir = await initialized();
    const missing = await aip(['export', '-o', join('no-such-folder', 'x.aipb')], { cwd: dir });
    expect(missing.code).toBe(6);
    expect(missing.stderr).toMatch(/^aip: io: ENOENT .*x\.aipb\n$/);
    const folder = await aip(['export', '-o', '.aip'], { cwd: dir });
    expect(folder.code).toBe(6);
    expect(folder.stderr).toMatch(/^aip: io: EISDIR /);
  });

  it('a failed export removes the file it created but never a path that existed (a device, FIFO or link)', async () => {
    const dir = await initialized();
    const put = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'x' });
    const id = put.text.trim();
    const object = join(dir, '.aip', 'objects', id.slice(0, 2), id.slice(2));
    await chmod(object, 0o644);
    await writeFile(object, 'corrupt');
    const fresh = await aip(['export', '-o', 'new.aipb'], { cwd: dir });
    expect(fresh.code).toBe(5);
    expect(fresh.stderr).toMatch(/^aip: store\.hash: /);
    await expect(lstat(join(dir, 'new.aipb'))).rejects.toMatchObject({ code: 'ENOENT' });
    await writeFile(join(dir, 'target'), '');
    await symlink('target', join(dir, 'link'));
    const linked = await aip(['export', '-o', 'link'], { cwd: dir });
    expect(linked.code).toBe(5);
    expect((await lstat(join(dir, 'link'))).isSymbolicLink()).toBe(true);
  });
});

describe('a closed stdout', () => {
  /** Runs the bin with our end of its stdout closed, as `aip ... | head -c1` leaves it once head exits. */
  function withClosedStdout(args: readonly string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
    return new Promise((settle, reject) => {
      const child = spawn(process.execPath, [AIP_BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.destroy();
      const err: Buffer[] = [];
      child.stderr.on('data', (c: Buffer) => err.push(c));
      child.on('error', reject);
      child.on('close', (code) => settle({ code, stderr: Buffer.concat(err).toString('utf8') }));
    });
  }

  it('does not crash aip run --tee: the run completes and its evidence is stored', async () => {
    const dir = await initialized();
    const run = await withClosedStdout(['run', '--tee', '--', 'sh', '-c', 'head -c 2000000 /dev/zero'], dir);
    expect(run.stderr).not.toContain('EPIPE');
    expect(run.code).toBe(0);
    const log = await aip(['log'], { cwd: dir });
    expect(log.text).toMatch(/evidence [0-9a-f]{64} command pass \(executed\)/);
  });

  it('ends cat --content quietly with the command exit code', async () => {
    const dir = await initialized();
    const put = await aip(['put', '--from', 'raw'], { cwd: dir, input: Buffer.alloc(3 * 1024 * 1024) });
    const cat = await withClosedStdout(['cat', '--content', put.text.trim()], dir);
    expect(cat).toEqual({ code: 0, stderr: '' });
  });
});
