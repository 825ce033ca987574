// A Ctrl-C that lands the moment `aipcs export` has created its temp file,
// or `aipcs import` its private spool folder, before either is registered
// for removal: the signal used to take its default action there and leave
// the file or folder behind (ops spec §1.9.4 "the temp file is always
// removed", §5.9 spool "removed afterwards"). Now the signal waits until the
// path is registered, then removes it (the export still ends by the signal).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, materialisedServiceThenStop, rootArgs } from '../../support/aipcs-admin.js';
import { aipcsBin } from '../../support/bins.js';

const PRELOAD = resolve(dirname(fileURLToPath(import.meta.url)), '../../support/signal-after-create.mjs');

function interruptedAfter(fsFunction: string, match: string, args: string[], env: Record<string, string> = {}): { status: number | null; signal: NodeJS.Signals | null } {
  const run = spawnSync(process.execPath, ['--import', PRELOAD, aipcsBin(), ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', AIPCS_TEST_SIGNAL_AFTER: fsFunction, AIPCS_TEST_SIGNAL_MATCH: match, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, signal: run.signal };
}

describe('Ctrl-C right after a temp path is created (built CLI)', () => {
  it('import: the spool folder just made is removed', () => {
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-spool-signal-'));
    const artefact = join(mkdtempSync(join(tmpdir(), 'aipcs-spool-input-')), 'in.jsonl');
    writeFileSync(artefact, '{}\n');
    // The spool is made before the artefact is read or storage opened.
    const ended = interruptedAfter('mkdtempSync', 'aipcs-bundle-', ['import', '--input', artefact, '--operation-id', '00000000-0000-4000-8000-000000000003', '--yes', ...rootArgs(freshDataRoot())], {
      TMPDIR: spools,
    });
    // Before, SIGINT's default action ended the command right there, with the folder left behind. Now the
    // folder goes either way: by the signal's cleanup, or (this tiny artefact fails validation at once,
    // before the signal's handler gets its turn) by the command's own, which then ends with exit 2.
    expect(readdirSync(spools)).toEqual([]);
    expect(ended.signal === 'SIGINT' || ended.status === 2).toBe(true);
  });

  it('export: the temp file just opened is removed and the command ends by SIGINT', async () => {
    const dataRoot = freshDataRoot();
    const serviceId = await materialisedServiceThenStop(dataRoot, 'interrupted_at_creation');
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', '00000000-0000-4000-8000-000000000001', ...rootArgs(dataRoot)]).status).toBe(0);
    const out = mkdtempSync(join(tmpdir(), 'aipcs-export-signal-'));
    const exportArgs = ['export', serviceId, '--output', join(out, 'x.jsonl'), '--expected-revision', '4', '--operation-id', '00000000-0000-4000-8000-000000000002', ...rootArgs(dataRoot)];
    const ended = interruptedAfter('openSync', '.aipcs-export-', exportArgs);
    expect(ended).toEqual({ status: null, signal: 'SIGINT' });
    expect(readdirSync(out)).toEqual([]);
  });
});
