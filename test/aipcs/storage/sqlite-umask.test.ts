// The SQLite location policy wants the directories it creates at exactly 0700
// and the databases at exactly 0600 (ops spec §3.2.2), and so does `serve`
// when it creates them under any umask. mkdir and open take the umask off
// the mode: under umask 0277 the root was made 0500 and the registry 0400,
// which the policy itself then refused, on that start and every later one.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';

const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n';

/** `aipcs serve` on the sqlite profile under `umask`, with `env` (a stdio session of one initialize). */
function serveUnderUmask(umask: string, args: readonly string[], env: Record<string, string>) {
  return spawnSync('/bin/sh', ['-c', `umask ${umask} && exec "$@"`, 'sh', process.execPath, aipcsBin(), 'serve', '--profile', 'sqlite', '--principal-id', 'agent', ...args], {
    input: INIT,
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '', ...env },
    timeout: 30_000,
  });
}

const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8);

describe('sqlite storage created under a narrow umask', () => {
  it.each(['0277', '0777'])('umask %s: a configured root is 0700 and its registry 0600, and the next start accepts them', (umask) => {
    const dataRoot = join(mkdtempSync(join(tmpdir(), 'aipcs-umask-')), 'data');
    const first = serveUnderUmask(umask, ['--sqlite-data-root', dataRoot], {});
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    expect(first.stdout).toContain('"serverInfo"');
    expect([mode(dataRoot), mode(join(dataRoot, 'registry.sqlite'))]).toEqual(['700', '600']);
    const again = serveUnderUmask('022', ['--sqlite-data-root', dataRoot], {});
    expect(again.status, again.stderr).toBe(0);
  });

  it('umask 0277: the default root and the folders made on the way to it are 0700', () => {
    const home = mkdtempSync(join(tmpdir(), 'aipcs-umask-home-'));
    const run = serveUnderUmask('0277', [], { HOME: home });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const root = join(home, '.local', 'share', 'aipcs');
    expect([join(home, '.local'), join(home, '.local', 'share'), root].map(mode)).toEqual(['700', '700', '700']);
    expect(mode(join(root, 'registry.sqlite'))).toBe('600');
  });
});
