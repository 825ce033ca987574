// Black-box walk of the objects spec, section 10, through the built `aip`
// bin: every positive vector is stored under its exact ID, read back byte
// for byte, and survives the JSON presentation; every negative vector is
// refused by `aip put` with its code (exit 5, `aip: {code}: ` on stderr, the
// same code in `--format json`) and nothing is stored; `export --all` of
// V1..V13 lists them in dependency order with ties by ascending ID.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from './support/cli.js';
import { tempDir } from './support/temp.js';
import { VECTORS, hexToBytes } from './support/vectors.js';

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const stored = (dir: string, id: string): boolean => existsSync(join(dir, '.aip', 'objects', id.slice(0, 2), id.slice(2)));

/** The items of a bundle after its header: each one a byte string holding an object. */
function bundleIds(bundle: Buffer): string[] {
  let at = 0;
  const argument = (): number => {
    const info = (bundle[at] as number) & 0x1f;
    at += 1;
    if (info < 24) return info;
    const width = 1 << (info - 24);
    const value = bundle.readUIntBE(at, width);
    at += width;
    return value;
  };
  const skip = (): void => {
    const major = (bundle[at] as number) >> 5;
    const n = argument();
    if (major === 2 || major === 3) at += n;
  };
  expect(bundle[at]).toBe(0xa3);
  at += 1;
  for (let i = 0; i < 6; i++) skip();
  const ids: string[] = [];
  while (at < bundle.length) {
    expect((bundle[at] as number) >> 5).toBe(2);
    const n = argument();
    ids.push(sha256(bundle.subarray(at, at + n)));
    at += n;
  }
  return ids;
}

describe('section 10 vectors through the aip bin', () => {
  let dir = '';

  beforeAll(async () => {
    requireBuiltBin();
    dir = await tempDir('aip-');
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  });

  it('stores V1..V13 under their IDs, cats the exact bytes, and round-trips the JSON presentation', async () => {
    const other = await tempDir('aip-json-');
    expect((await aip(['init'], { cwd: other })).code).toBe(0);
    for (const vector of VECTORS.positive) {
      const bytes = hexToBytes(vector.hex);
      expect(sha256(bytes), vector.n).toBe(vector.id);
      const put = await aip(['put', '-'], { cwd: dir, input: bytes });
      expect([put.code, put.text, put.stderr], vector.n).toEqual([0, `${vector.id}\n`, '']);
      const cat = await aip(['cat', vector.id], { cwd: dir });
      expect(cat.stdout.toString('hex'), vector.n).toBe(vector.hex);
      const show = await aip(['show', vector.id], { cwd: dir });
      const shown = JSON.parse(show.text) as { id: string; type: string; version: number };
      expect([shown.id, shown.type, shown.version], vector.n).toEqual([vector.id, vector.type, vector.version]);
      const file = join(other, `${vector.n}.json`);
      await writeFile(file, show.text);
      const fromJson = await aip(['put', '--from', 'json', file], { cwd: other });
      expect([fromJson.code, fromJson.text], vector.n).toEqual([0, `${vector.id}\n`]);
      const again = await aip(['cat', vector.id], { cwd: other });
      expect(again.stdout.toString('hex'), vector.n).toBe(vector.hex);
    }
    const verify = await aip(['verify', '--all'], { cwd: dir });
    expect(verify.code).toBe(0);
    expect(verify.text.endsWith('13 verified, 0 invalid\n')).toBe(true);
  });

  it('refuses N1..N41 with their codes and exit 5, storing nothing', async () => {
    expect(VECTORS.negative).toHaveLength(41);
    for (const vector of VECTORS.negative) {
      const bytes = hexToBytes(vector.hex);
      const put = await aip(['--format', 'json', 'put', '-'], { cwd: dir, input: bytes });
      expect(put.code, `${vector.n}: ${put.stderr}`).toBe(5);
      expect(put.stderr.startsWith(`aip: ${vector.code}: `), `${vector.n}: ${put.stderr}`).toBe(true);
      expect((JSON.parse(put.text) as { error: { code: string } }).error.code, vector.n).toBe(vector.code);
      expect(stored(dir, sha256(bytes)), vector.n).toBe(false);
    }
  });

  it('exports V1..V13 in dependency order with ties by ascending ID', async () => {
    const exported = await aip(['export', '--all'], { cwd: dir });
    expect(exported.code).toBe(0);
    const ids = bundleIds(exported.stdout);
    // The expected order, built independently: repeatedly take the smallest ID
    // whose references (IDs inside its bytes) are all placed already.
    const references = new Map(
      VECTORS.positive.map((v) => [v.id, VECTORS.positive.filter((w) => w.id !== v.id && Buffer.from(hexToBytes(v.hex)).includes(w.id)).map((w) => w.id)]),
    );
    const placed: string[] = [];
    while (placed.length < references.size) {
      const ready = [...references].filter(([id, refs]) => !placed.includes(id) && refs.every((r) => placed.includes(r))).map(([id]) => id).sort();
      placed.push(ready[0] as string);
    }
    expect(ids).toEqual(placed);
  });
});
