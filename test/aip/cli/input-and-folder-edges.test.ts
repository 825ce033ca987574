// Edges of how `aip` takes its input and its current folder: an input of
// exactly the bound is taken (from stdin and from FILE), only a byte more
// is refused; a folder whose name holds U+FFFD as a real character is an
// ordinary folder (only a path Node could not read as UTF-8 is refused);
// SIGTERM and SIGHUP cancel `aip run` as Ctrl-C does (spec 8 step 5).
import { spawn } from 'node:child_process';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT_STATE_ID } from '../../../src/aip/core/objects.js';
import { AIP_BIN, aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const SMALL = 1_048_576;

async function small(): Promise<string> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  await writeFile(join(dir, '.aip', 'config.json'), `{"format":"aip-repository","version":1,"max_object_bytes":${SMALL}}`);
  return dir;
}

describe('an input of exactly the bound (spec 7.2, 9.3)', () => {
  it('put takes an object of exactly max_object_bytes and raw content of the largest artifact, from stdin and from FILE', async () => {
    const dir = await small();
    const content = Buffer.alloc(SMALL - 53, 0x61); // the largest content whose artifact is max_object_bytes
    const fromStdin = await aip(['put', '--from', 'raw'], { cwd: dir, input: content });
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    const id = fromStdin.text.trim();
    await writeFile(join(dir, 'content'), content);
    expect((await aip(['put', '--from', 'raw', 'content'], { cwd: dir })).text).toBe(`${id}\n`);
    const bytes = (await aip(['cat', id], { cwd: dir })).stdout;
    expect(bytes.length).toBe(SMALL);

    const other = await small();
    const cbor = await aip(['put'], { cwd: other, input: bytes });
    expect([cbor.code, cbor.text, cbor.stderr]).toEqual([0, `${id}\n`, '']);
    await writeFile(join(other, 'object.cbor'), bytes);
    const third = await small();
    const file = await aip(['put', join(other, 'object.cbor')], { cwd: third });
    expect([file.code, file.text, file.stderr]).toEqual([0, `${id}\n`, '']);

    // One byte more is refused, from either source.
    const more = Buffer.concat([content, Buffer.from('a')]);
    await writeFile(join(dir, 'more'), more);
    expect((await aip(['put', '--from', 'raw'], { cwd: dir, input: more })).code).toBe(5);
    expect((await aip(['put', '--from', 'raw', 'more'], { cwd: dir })).code).toBe(5);
  });
});

describe('the current folder (spec 7.1, 9.2)', () => {
  it('a folder named with U+FFFD itself (valid UTF-8) is used like any other', async () => {
    const parent = await tempDir();
    const dir = join(parent, 'proj\uFFFD');
    await mkdir(dir);
    const init = await aip(['init'], { cwd: dir });
    expect([init.code, init.stderr]).toEqual([0, '']);
    expect(init.text).toBe(`initialized ${dir}/.aip\nHEAD ${ROOT_STATE_ID}\n`);
    expect((await stat(join(dir, '.aip', 'HEAD'))).isFile()).toBe(true);
    expect(await aip(['status'], { cwd: dir })).toMatchObject({ code: 0, text: 'A .aipignore\n', stderr: '' });
  });

  it('a folder whose path is not UTF-8 is refused even when its U+FFFD look-alike exists, and nothing is made in either', async () => {
    const parent = await tempDir();
    const lookAlike = join(parent, 'proj\uFFFD');
    await mkdir(lookAlike);
    const init = await new Promise<{ code: number | null; stdout: string; stderr: string }>((settle, reject) => {
      const enter = `mkdir "$(printf 'proj\\377')" && cd "$(printf 'proj\\377')"`;
      const child = spawn('sh', ['-c', `${enter} && exec "$0" "$@"`, process.execPath, AIP_BIN, 'init'], { cwd: parent, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) => settle({ code, stdout, stderr }));
    });
    expect([init.code, init.stdout]).toEqual([6, '']);
    expect(init.stderr).toMatch(/^aip: io: the current folder's path is not valid UTF-8, /);
    expect(await readdir(lookAlike)).toEqual([]);
    expect(await readdir(Buffer.concat([Buffer.from(`${parent}/proj`), Buffer.from([0xff])]))).toEqual([]);
  });
});

describe('aip run cancelled by SIGTERM or SIGHUP (spec 8 step 5)', () => {
  for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
    it(`${signal}: exit 130, the evidence stored with "cancelled by ${signal}"`, async () => {
      const dir = await tempDir();
      expect((await aip(['init'], { cwd: dir })).code).toBe(0);
      const child = spawn(process.execPath, [AIP_BIN, 'run', '--tee', '--', 'sh', '-c', 'echo ready; exec sleep 30'], { cwd: dir });
      let out = '';
      let sent = false;
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (!sent && out.includes('ready')) {
          sent = true;
          child.kill(signal);
        }
      });
      const [code, killedBy] = await new Promise<[number | null, NodeJS.Signals | null]>((settle) => child.on('close', (c, s) => settle([c, s])));
      expect([code, killedBy]).toEqual([130, null]);
      const evidence = out.split('\n').find((l) => l.startsWith('evidence '))?.slice('evidence '.length) ?? '';
      const shown = await aip(['--format', 'json', 'show', evidence], { cwd: dir });
      expect(JSON.parse(shown.text)).toMatchObject({ data: { termination: 'cancelled', error: `cancelled by ${signal}` } });
    });
  }
});
