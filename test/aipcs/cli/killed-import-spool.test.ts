// An import killed with kill -9 (or a crash) cannot remove its private
// `aipcs-bundle-*` spool (ops spec §5.9: "removed afterwards"), which holds a
// whole artefact, up to 256 MiB, in TMPDIR. The spool's name carries the
// importing process's pid, and the next import removes the spools of
// imports whose process is gone (over a minute old, ours, a directory);
// a running import's spool stays, and so does one named in another PID
// namespace (a container sharing TMPDIR: its pid names nothing here).

import { spawnSync } from 'node:child_process';
import { chownSync, lutimesSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
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

  it('keep what is not surely a dead import\'s: a spool under a minute old, a symbolic link, another user\'s folder', () => {
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-killed-import-kept-'));
    const gone = spawnSync(process.execPath, ['-e', '']).pid as number;
    const aMinuteAgo = new Date(Date.now() - 120_000);
    // Its process may have just died, or its pid may be about to be reused: only an old spool goes.
    const fresh = `aipcs-bundle-${gone}-Fr3shA`;
    mkdirSync(join(spools, fresh), { mode: 0o700 });
    // A link named like a spool is not ours to follow or remove.
    const target = mkdtempSync(join(tmpdir(), 'aipcs-killed-import-target-'));
    const link = `aipcs-bundle-${gone}-L1nkAb`;
    symlinkSync(target, join(spools, link));
    lutimesSync(join(spools, link), aMinuteAgo, aMinuteAgo);
    const kept = [fresh, link];
    // Root can hand one to another user: that user's spool stays.
    if (process.getuid?.() === 0) {
      const foreign = `aipcs-bundle-${gone}-F0reig`;
      mkdirSync(join(spools, foreign), { mode: 0o700 });
      chownSync(join(spools, foreign), 65534, 65534);
      utimesSync(join(spools, foreign), aMinuteAgo, aMinuteAgo);
      kept.push(foreign);
    }
    const artefact = join(mkdtempSync(join(tmpdir(), 'aipcs-killed-import-input-')), 'not-a-bundle.jsonl');
    writeFileSync(artefact, 'not an artefact\n');

    const run = aipcs(['import', '--input', artefact, '--operation-id', 'a7c10000-0000-4000-8000-000000000002', '--yes', ...rootArgs(freshDataRoot())], { env: { TMPDIR: spools } });
    expect(run.envelope.error?.code, run.stderr).toBe('validation_failed');
    expect(readdirSync(spools).sort()).toEqual(kept.sort());
    expect(readdirSync(target)).toEqual([]);
  });
});
