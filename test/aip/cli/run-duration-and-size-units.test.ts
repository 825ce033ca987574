// `aip run --timeout` and `--output-limit` read every unit spec 9.3 lists
// (ns, us, ms, s, m, h; K, M, G in powers of 1024) into the evidence's
// timeout_ns and output_limit, and take the largest value each may have: a
// duration up to 2^64-1 ns, a size up to max_object_bytes - 64. Only the
// bare number and K were checked before (docs-help.test.ts), so a unit
// read as a thousand times too long or short went unnoticed.
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

async function initialized(): Promise<string> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  return dir;
}

describe('aip run units (spec 9.3)', () => {
  it('--timeout: ns, us, ms, s, m and h give the nanoseconds they name', async () => {
    const dir = await initialized();
    const cases: [string, number][] = [
      ['4000000000ns', 4_000_000_000],
      ['3000000us', 3_000_000_000],
      ['2500ms', 2_500_000_000],
      ['7s', 7_000_000_000],
      ['7', 7_000_000_000],
      ['90m', 5_400_000_000_000],
      ['2h', 7_200_000_000_000],
    ];
    for (const [duration, ns] of cases) {
      const run = await aip(['--format', 'json', 'run', '--timeout', duration, '--', 'true'], { cwd: dir });
      expect(run.code, duration).toBe(0);
      expect((JSON.parse(run.text) as { data: { timeout_ns: number } }).data.timeout_ns, duration).toBe(ns);
    }
  });

  it('--timeout takes 2^64-1 ns and refuses one more (usage, exit 2)', async () => {
    const dir = await initialized();
    const max = await aip(['--format', 'json', 'run', '--timeout', '18446744073709551615ns', '--', 'true'], { cwd: dir });
    expect(max.code, max.stderr).toBe(0);
    expect(max.text).toContain('"timeout_ns":18446744073709551615,');
    const over = await aip(['run', '--timeout', '18446744073709551616ns', '--', 'true'], { cwd: dir });
    expect([over.code, over.stderr]).toEqual([2, 'aip: usage: duration 18446744073709551616ns is too long\n']);
  });

  it('--output-limit: K and M are powers of 1024; max_object_bytes - 64 is taken and one more byte refused', async () => {
    const dir = await initialized();
    const cases: [string, number][] = [
      ['5', 5],
      ['2K', 2048],
      ['3M', 3 * 1024 * 1024],
      [String(67_108_864 - 64), 67_108_864 - 64],
    ];
    for (const [size, bytes] of cases) {
      const run = await aip(['--format', 'json', 'run', '--output-limit', size, '--', 'true'], { cwd: dir });
      expect(run.code, size).toBe(0);
      expect((JSON.parse(run.text) as { data: { output_limit: number } }).data.output_limit, size).toBe(bytes);
    }
    const over = await aip(['run', '--output-limit', String(67_108_864 - 63), '--', 'true'], { cwd: dir });
    expect([over.code, over.stderr]).toEqual([2, `aip: usage: size ${67_108_864 - 63} exceeds ${67_108_864 - 64} bytes (max_object_bytes - 64)\n`]);
    const giga = await aip(['run', '--output-limit', '1G', '--', 'true'], { cwd: dir });
    expect(giga.code).toBe(2);
  });
});
