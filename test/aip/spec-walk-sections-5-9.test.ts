// A black-box walk through spec sections 5-9 of aip-objects.md with the built
// `aip` bin; each case here is a difference the walk found between the spec
// and what the command did.

import { spawnSync } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeCanonical, type CborValue } from '../../src/aip/core/cbor-profile.js';
import { artifactEncodedLength, makeArtifact, maxArtifactContent, mustEncode } from '../../src/aip/core/codec.js';
import { ROOT_STATE_ID, type AipObject, type IntentV1, type OperationV1 } from '../../src/aip/core/objects.js';
import { firstNonUtf8Argument } from '../../src/common/raw-arguments.js';
import { AIP_BIN, aip, requireBuiltBin } from './support/cli.js';
import { tempDir } from './support/temp.js';

beforeAll(() => {
  requireBuiltBin();
});

const MIB = 1_048_576;

/** A fresh repository whose config sets `max_object_bytes`. */
async function repoWithMax(maxObjectBytes: number): Promise<string> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  const config = JSON.parse(await readFile(join(dir, '.aip/config.json'), 'utf8')) as Record<string, unknown>;
  await writeFile(join(dir, '.aip/config.json'), JSON.stringify({ ...config, max_object_bytes: maxObjectBytes, run: { output_limit: 1024 } }));
  return dir;
}

describe('7.7 rule 5: every file that fits in an artifact can be recorded', () => {
  it('maxArtifactContent is the largest content whose artifact encoding is within the bound', () => {
    for (const max of [49, 50, 72, 73, 74, 300, 65_600, MIB, MIB + 7, 67_108_864, 1_073_741_824]) {
      const n = maxArtifactContent(max);
      expect(artifactEncodedLength(n)).toBeLessThanOrEqual(max);
      expect(artifactEncodedLength(n + 1)).toBeGreaterThan(max);
    }
  });

  it('snapshots and runs a state whose largest file makes an artifact of exactly max_object_bytes', async () => {
    const dir = await repoWithMax(MIB);
    const largest = maxArtifactContent(MIB); // 1 048 523: 25 + 5 + content + 23 bytes
    expect(largest).toBe(MIB - 53);
    await writeFile(join(dir, 'big.bin'), Buffer.alloc(largest, 0x61));

    const status = await aip(['status'], { cwd: dir });
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    expect(status.text).toContain('A big.bin\n');

    const snapshot = await aip(['snapshot', '--title', 'big', '--goal', 'a file at the size limit'], { cwd: dir });
    expect(snapshot.stderr).toBe('');
    expect(snapshot.code).toBe(0);
    // Materialising checks the folder against the state with the same size bound (spec 8 step 1).
    const run = await aip(['run', '--', 'true'], { cwd: dir });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.text).toContain('result pass (termination exited, exit 0, workspace clean)');

    await writeFile(join(dir, 'big.bin'), Buffer.alloc(largest + 1, 0x61));
    const tooLarge = await aip(['status'], { cwd: dir });
    expect(tooLarge.code).toBe(5);
    expect(tooLarge.stderr).toMatch(/^aip: snapshot\.invalid: big\.bin: 1048524 bytes do not fit/);
  });
});

describe('7.8: an import failure names the item as the bundle numbers it', () => {
  const byteString = (bytes: Uint8Array): Buffer => {
    const encoded = encodeCanonical(bytes);
    if (!encoded.ok) throw encoded.error;
    return Buffer.from(encoded.value);
  };
  const header = (objects: number): Buffer => {
    const encoded = encodeCanonical(new Map<string, CborValue>([['format', 'aip-bundle'], ['objects', objects], ['version', 1]]));
    if (!encoded.ok) throw encoded.error;
    return Buffer.from(encoded.value);
  };

  it('reports the third object as item 4 (the header is item 1)', async () => {
    const artifact = mustEncode(makeArtifact(Buffer.from('kept\n')));
    const intent = mustEncode<IntentV1>({
      type: 'intent',
      version: 1,
      data: { goal: 'g', title: 't', context: [], parents: [], created_at: '2026-01-01T00:00:00.000000000Z', constraints: [] },
    });
    const missing = mustEncode(makeArtifact(Buffer.from('never in the bundle\n')));
    const operation = mustEncode<AipObject>({
      type: 'operation',
      version: 1,
      data: {
        inputs: [],
        intent: intent.id,
        effects: [{ path: 'a', before: null, after: { artifact: missing.id, executable: false } }],
        base_state: ROOT_STATE_ID,
      },
    } satisfies OperationV1);
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const bundle = Buffer.concat([header(3), byteString(artifact.bytes), byteString(intent.bytes), byteString(operation.bytes)]);

    const imported = await aip(['import'], { cwd: dir, input: bundle });
    expect(imported.code).toBe(5);
    expect(imported.stderr).toBe(`aip: graph.missing: item 4 (object 3 of 3) (${operation.id}): ${operation.id}: data.effects[0].after.artifact: ${missing.id} is not stored\n`);
    // The objects before it stay.
    expect((await aip(['cat', intent.id], { cwd: dir })).code).toBe(0);
  });
});

describe('3.4 / 2.2: an argument that is not UTF-8 is refused, not stored or run as U+FFFD', () => {
  /** Runs the bin through sh so that an argument can carry raw bytes (`printf '\\377'`). */
  const viaShell = (cwd: string, script: string): { code: number | null; stdout: string; stderr: string } => {
    const done = spawnSync('/bin/sh', ['-c', script, 'sh', process.execPath, AIP_BIN], { cwd, encoding: 'utf8' });
    return { code: done.status, stdout: done.stdout, stderr: done.stderr };
  };
  const objectCount = async (dir: string): Promise<number> => {
    let count = 0;
    for (const sub of await readdir(join(dir, '.aip/objects'))) count += (await readdir(join(dir, '.aip/objects', sub))).length;
    return count;
  };

  it('aip run does not execute printf with U+FFFD in place of the byte', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const before = await objectCount(dir);
    const run = viaShell(dir, `"$1" "$2" run -- printf "a$(printf '\\377')b"`);
    expect(run.stderr).toBe('aip: usage: argument 4 is not valid UTF-8; aip arguments are text, and the invalid bytes would be replaced by U+FFFD\n');
    expect(run.code).toBe(2);
    expect(await objectCount(dir)).toBe(before);

    const json = viaShell(dir, `"$1" "$2" --format json intent --title "$(printf '\\303')" --goal g`);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({ error: { code: 'usage', message: expect.stringMatching(/^argument 5 is not valid UTF-8/) as unknown } });
    // A real U+FFFD typed by the user is text like any other.
    const replacement = viaShell(dir, `"$1" "$2" intent --title "$(printf '\\357\\277\\275')" --goal g`);
    expect(replacement.stderr).toBe('');
    expect(replacement.code).toBe(0);
  });

  it('firstNonUtf8Argument reads the raw bytes and trusts them only when they end with the arguments', async () => {
    const file = join(await tempDir(), 'cmdline');
    const raw = (...parts: (string | Buffer)[]): Buffer => Buffer.concat(parts.flatMap((p) => [Buffer.from(p), Buffer.from([0])]));
    await writeFile(file, raw('node', '/bin/aip', 'run', '--', Buffer.from([0x61, 0xff]), ''));
    expect(firstNonUtf8Argument(['run', '--', 'a\ufffd', ''], file)).toBe(3);
    // No U+FFFD in the arguments: nothing to check, the file is not read.
    expect(firstNonUtf8Argument(['run', '--', 'ab', ''], join(file, 'absent'))).toBeUndefined();
    // Bytes that do not decode to these arguments (a rewritten process title) prove nothing.
    expect(firstNonUtf8Argument(['run', '--', 'b\ufffd', ''], file)).toBeUndefined();
    // Without /proc nothing can be said.
    expect(firstNonUtf8Argument(['a\ufffd'], join(file, 'absent'))).toBeUndefined();
  });
});
