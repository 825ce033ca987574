// HOME or XDG_CONFIG_HOME whose bytes are not UTF-8 (a home folder named in
// Latin-1, `/home/j\xf6rg`). Node decodes the environment with U+FFFD in place
// of such bytes, so aigpt read and wrote `/home/j\u{FFFD}rg`, another folder,
// which it created and filled while the real one stayed empty. It now stops
// with a config error (exit 1) naming the variable; a variable that is not
// used (HOME when XDG_CONFIG_HOME is set) and a real U+FFFD stay fine.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { aigptBin, runToEnd, type RunResult } from './support.js';

const parents: string[] = [];
afterEach(() => {
  for (const parent of parents.splice(0)) rmSync(parent, { recursive: true, force: true });
});

function tempParent(): string {
  const parent = mkdtempSync(join(tmpdir(), 'aigpt-bytes-'));
  parents.push(parent);
  return parent;
}

/**
 * Runs aigpt with `assignments` (NAME=printf-format, `%s` being `base`) set by a
 * shell, since Node can only pass text in a child's environment.
 */
function aigptWithRawEnv(base: string, assignments: Record<string, string>, args: readonly string[], input = ''): Promise<RunResult> {
  const exports = Object.entries(assignments)
    .map(([name, format]) => `${name}="$(printf '${format}' "$BASE")"; export ${name}`)
    .join('; ');
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'] ?? '', BASE: base };
  return runToEnd('/bin/sh', ['-c', `${exports}; exec "$@"`, 'sh', process.execPath, aigptBin(), ...args], { env, cwd: base }, input);
}

/** Names under `folder`, as hex of their bytes. */
const namesHex = (folder: string): string[] => readdirSync(folder, { encoding: 'buffer' }).map((name) => name.toString('hex')).sort();

describe('folder variables that are not UTF-8', () => {
  it('HOME: every command, the server too, stops with a config error and creates nothing', async () => {
    const base = tempParent();
    const home = Buffer.concat([Buffer.from(`${base}/j`), Buffer.from([0xf6]), Buffer.from('rg')]);
    mkdirSync(home);
    const message = `aigpt: HOME is not valid UTF-8: aigpt names folders as text, and as text it is ${JSON.stringify(`${base}/j\ufffdrg`)}, another folder; set HOME to a UTF-8 path\n`;
    for (const args of [[], ['save-memory', 'lost'], ['read-memory'], ['server']]) {
      const run = await aigptWithRawEnv(base, { HOME: '%s/j\\366rg' }, args, `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })}\n`);
      expect(run).toEqual({ code: 1, stdout: '', stderr: message });
    }
    // Only the real home folder, still empty: no look-alike `j\u{FFFD}rg` beside it.
    expect(namesHex(base)).toEqual([home.subarray(base.length + 1).toString('hex')]);
    expect(readdirSync(home)).toEqual([]);
  });

  it('XDG_CONFIG_HOME: refused the same way when it is used', async () => {
    const base = tempParent();
    mkdirSync(join(base, 'home'));
    const run = await aigptWithRawEnv(base, { HOME: '%s/home', XDG_CONFIG_HOME: '%s/c\\377' }, ['read-memory']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`aigpt: XDG_CONFIG_HOME is not valid UTF-8: aigpt names folders as text, and as text it is ${JSON.stringify(`${base}/c\ufffd`)}, another folder; set XDG_CONFIG_HOME to a UTF-8 path\n`);
    expect(namesHex(base)).toEqual([Buffer.from('home').toString('hex')]);
  });

  it('an unused HOME does not matter, and a real U+FFFD in HOME is an ordinary name', async () => {
    const base = tempParent();
    const viaXdg = await aigptWithRawEnv(base, { HOME: '%s/j\\366rg', XDG_CONFIG_HOME: '%s/config' }, ['save-memory', 'kept']);
    expect(viaXdg).toEqual({ code: 0, stdout: 'Saved. (1 records)\n', stderr: '' });
    expect(existsSync(join(base, 'config', 'ai.syui.gpt', 'config.json'))).toBe(true);

    const replacement = await aigptWithRawEnv(base, { HOME: '%s/r\\357\\277\\275' }, ['save-memory', 'kept']);
    expect(replacement).toEqual({ code: 0, stdout: 'Saved. (1 records)\n', stderr: '' });
    expect(existsSync(join(base, 'r\ufffd', '.config', 'ai.syui.gpt', 'config.json'))).toBe(true);
  });
});
