// An import killed with kill -9 (or a crash) cannot remove its private
// `aipcs-bundle-*` spool (ops spec §5.9: "removed afterwards"), which holds a
// whole artefact, up to 256 MiB, in TMPDIR. The spool's name carries the
// importing process's pid, and the next import removes the spools of
// imports whose process is gone (over a minute old, ours, a directory);
// a running import's spool stays, and so does one named in another PID
// namespace (a container sharing TMPDIR: its pid names nothing here).

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownerTag } from '../../../src/common/process.js';
import { aipcs, freshDataRoot, rootArgs } from '../../support/aipcs-admin.js';

describe('spools of killed imports', () => {
  it('are removed by the next import; a running import keeps its own', () => {
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-killed-import-'));
    const gone = spawnSync(process.execPath, ['-e', '']).pid as number;
    const dead = `aipcs-bundle-${gone}-Ab3xYz`;
    const running = `aipcs-bundle-${ownerTag()}-Qw9eRt`;
    const namespace = /\.([0-9]+)$/.exec(ownerTag())?.[1];
    const deadHere = namespace === undefined ? undefined : `aipcs-bundle-${gone}.${namespace}-Cd4eFg`;
    const otherNamespace = `aipcs-bundle-${gone}.1-Hi5jKl`;
    const aMinuteAgo = new Date(Date.now() - 120_000);
    for (const name of [dead, running, otherNamespace, ...(deadHere === undefined ? [] : [deadHere])]) {
      mkdirSync(join(spools, name), { mode: 0o700 });
      writeFileSync(join(spools, name, 'bundle.jsonl'), '{"kind":"header"}\n', { mode: 0o600 });
      utimesSync(join(spools, name), aMinuteAgo, aMinuteAgo);
    }
    const artefact = join(mkdtempSync(join(tmpdir(), 'aipcs-killed-import-input-')), 'not-a-bundle.jsonl');
    writeFileSync(artefact, 'not an artefact\n');

    const run = aipcs(['import', '--input', artefact, '--operation-id', 'a7c10000-0000-4000-8000-000000000001', '--yes', ...rootArgs(freshDataRoot())], { env: { TMPDIR: spools } });
    expect(run.envelope.error?.code, run.stderr).toBe('validation_failed');
    expect(readdirSync(spools).sort()).toEqual([running, otherNamespace].sort());
  });
});
