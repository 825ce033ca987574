// Command-line arguments and environment values that are not UTF-8 reach the
// configuration checks the way the reference's Python reads them
// (surrogateescape: each bad byte becomes a lone surrogate), so a principal id
// or data root holding such bytes fails as unprintable (operations §2.5.2,
// §2.5.3). Node alone decoded them with U+FFFD: `a\xffb` and `a\xfeb` were
// both accepted as the one principal `a\ufffdb` (two owners sharing one
// label), and a data root `/x/caf\xe9` was taken as another folder.

import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeSurrogateEscape, fileSystemPath, surrogateEscapedArguments, surrogateEscapedEnvironment } from '../../../src/common/raw-arguments.js';
import { aipcsBin } from '../../support/bins.js';

const root = join(mkdtempSync(join(tmpdir(), 'aipcs-nonutf8-')), 'data');

/** Runs `aipcs config validate` through a shell, which can put raw bytes (printf escapes) on the command line and in the environment. */
function validate(principalPrintf: string, dataRootPrintf: string, envPrintf?: string): { status: number | null; stdout: string; stderr: string } {
  const env = envPrintf === undefined ? '' : `AIPCS_PRINCIPAL_ID="$(printf '${envPrintf}')" `;
  const principal = principalPrintf === '' ? '' : ` --principal-id "$(printf '${principalPrintf}')"`;
  const script = `${env}exec "$0" "$1" config validate --profile sqlite${principal} --sqlite-data-root "$(printf '${dataRootPrintf}')"`;
  return spawnSync('/bin/sh', ['-c', script, process.execPath, aipcsBin()], { env: { PATH: process.env['PATH'] ?? '' }, encoding: 'utf8' });
}

const issuePaths = (text: string): string[] => (JSON.parse(text) as { error: { issues: { path: string }[] } }).error.issues.map((issue) => issue.path);

describe('aipcs arguments that are not UTF-8', () => {
  it('decodes the way Python surrogateescape does', () => {
    const cases: [number[], string][] = [
      [[0x61, 0xff, 0x62], 'a\udcffb'],
      [[0xc3, 0xa9], '\u00e9'],
      [[0xe9], '\udce9'],
      [[0xe2, 0x82, 0x41], '\udce2\udc82A'],
      [[0xed, 0xa0, 0x80], '\udced\udca0\udc80'],
      [[0xf0, 0x9f, 0x98, 0x80], '\u{1F600}'],
      [[0xf4, 0x90, 0x80, 0x80], '\udcf4\udc90\udc80\udc80'],
      [[0xc0, 0xaf], '\udcc0\udcaf'],
      [[0xe0, 0x80, 0x80], '\udce0\udc80\udc80'],
    ];
    for (const [bytes, expected] of cases) expect(decodeSurrogateEscape(Uint8Array.from(bytes)), bytes.join(' ')).toBe(expected);
    // File calls get the bytes back (Python's os.fsencode); text without escapes stays text.
    for (const [bytes] of cases) expect(Buffer.from(fileSystemPath(decodeSurrogateEscape(Uint8Array.from(bytes)))).equals(Buffer.from(bytes)), bytes.join(' ')).toBe(true);
    expect(fileSystemPath('/tmp/caf\u00e9 \u{10080}')).toBe('/tmp/caf\u00e9 \u{10080}');
    expect(fileSystemPath('/x/\udce9\u{10080}')).toEqual(Buffer.concat([Buffer.from('/x/'), Buffer.of(0xe9), Buffer.from('\u{10080}')]));
  });

  it('leaves arguments and environments without U+FFFD alone, and values the process set itself', () => {
    expect(surrogateEscapedArguments(['a', 'é'], '/nonexistent')).toEqual(['a', 'é']);
    const env = { A: 'x\ufffd' };
    expect(surrogateEscapedEnvironment(env, '/nonexistent')).toBe(env);
  });

  it.runIf(process.platform === 'linux')('refuses a principal id or data root holding bytes that are not UTF-8 instead of taking U+FFFD in their place', () => {
    const good = validate('owner', root);
    expect(good.status, good.stderr).toBe(0);
    for (const principal of ['a\\377b', 'a\\376b', 'caf\\351']) {
      const result = validate(principal, root);
      expect(result.status, principal).toBe(2);
      expect(issuePaths(result.stderr || result.stdout), principal).toEqual(['principal_id']);
    }
    const fromEnv = validate('', root, 'x\\377');
    expect(fromEnv.status).toBe(2);
    expect(issuePaths(fromEnv.stderr || fromEnv.stdout)).toEqual(['principal_id']);
    const badRoot = validate('owner', `${root}\\351`);
    expect(badRoot.status).toBe(2);
    expect(issuePaths(badRoot.stderr || badRoot.stdout)).toEqual(['sqlite']);
    // Valid UTF-8 beyond ASCII still passes.
    expect(validate('caf\\303\\251', root).status).toBe(0);
  });
});
