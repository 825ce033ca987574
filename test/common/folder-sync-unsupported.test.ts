// On a file system that cannot fsync a folder (fsync of a directory fails
// with EINVAL: network and FUSE file systems, Ceph volumes), every command
// still completes: the folder sync after a rename or link is as durable as
// that file system gets, not a failed write. Before, `aip init` failed with
// `aip: io: EINVAL` (so aip could not be used there at all) and every
// `aipcs export` ended `operation_uncertain` with its artefact in place;
// aigpt already went on.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aigptBin } from '../aigpt/support.js';
import { aip } from '../aip/support/cli.js';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../support/aipcs-admin.js';
import { refusedSyscallsEnv } from '../support/refused-syscalls.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

describe('a file system that cannot fsync a folder', () => {
  it('aip: init, put, run and verify complete', async () => {
    const env = refusedSyscallsEnv('folder-fsync');
    const dir = mkdtempSync(join(tmpdir(), 'aip-folder-sync-'));
    const init = await aip(['init'], { cwd: dir, env });
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    const put = await aip(['put', '--from', 'raw', '-'], { cwd: dir, env, input: 'content' });
    expect(put.code).toBe(0);
    const run = await aip(['run', '--', 'true'], { cwd: dir, env });
    expect(run.code).toBe(0);
    const verify = await aip(['verify'], { cwd: dir, env });
    expect(verify.code).toBe(0);
    expect(verify.text).toMatch(/^4 verified, 0 invalid$/m);
  });

  it('aipcs: export publishes its artefact and succeeds', async () => {
    const dataRoot = freshDataRoot();
    const client = await serveOn(dataRoot);
    const args = rootArgs(dataRoot);
    const serviceId = await materialisedService(client, 'exported');
    await createNote(client, serviceId, { title: 'kept' });
    await client.close();
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
    const work = mkdtempSync(join(tmpdir(), 'aipcs-folder-sync-'));
    const exported = aipcs(['export', serviceId, '--output', join(work, 'out.jsonl'), '--expected-revision', '4', '--operation-id', OP(2), ...args], { env: refusedSyscallsEnv('folder-fsync') });
    expect(exported.stderr).toBe('');
    expect(exported.status).toBe(0);
    expect(readdirSync(work)).toEqual(['out.jsonl']);
    const dryRun = aipcs(['import', '--input', join(work, 'out.jsonl'), '--dry-run', ...args]);
    expect(dryRun.status).toBe(0);
  });

  it('aigpt: a save completes', () => {
    const home = mkdtempSync(join(tmpdir(), 'aigpt-folder-sync-'));
    const save = spawnSync(process.execPath, [aigptBin(), 'save-memory', 'kept'], { env: { PATH: process.env['PATH'] ?? '', HOME: home, ...refusedSyscallsEnv('folder-fsync') }, encoding: 'utf8' });
    expect(save.stderr).toBe('');
    expect(save.status).toBe(0);
  });
});
