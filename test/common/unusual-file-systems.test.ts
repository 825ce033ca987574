// File systems this machine lacks, made by a preload library that refuses
// the calls they refuse (test/support/refused-syscalls.ts).
//
// One that cannot fsync a folder (fsync of a directory fails with EINVAL:
// network and FUSE file systems, Ceph volumes): every command completes, the
// folder sync after a rename or link being as durable as that file system
// gets. Before, `aip init` failed with `aip: io: EINVAL` (aip could not be
// used there at all) and every `aipcs export` ended `operation_uncertain`
// with its artefact in place; aigpt already went on.
//
// One without hard links (FAT, exFAT: link fails with EPERM): aigpt and aip
// publish by their fallbacks, exclusive create or a check and rename under
// their lock, and concurrent writers still lose nothing. An aipcs export
// publishes only by hard link (operations spec 1.9.4): it refuses with
// storage_unavailable, leaves nothing, and the same operation completes on a
// file system that has them.

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aigptBin } from '../aigpt/support.js';
import { aip } from '../aip/support/cli.js';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../support/aipcs-admin.js';
import { refusedSyscallsEnv, type RefusedSyscall } from '../support/refused-syscalls.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const RECORD_FILE = /^[2-7a-z]{13}\.json$/;

function saveMemory(home: string, content: string, refused: RefusedSyscall): Promise<{ code: number | null; stderr: string }> {
  return new Promise((settle, reject) => {
    const child = spawn(process.execPath, [aigptBin(), 'save-memory', content], {
      env: { PATH: process.env['PATH'] ?? '', HOME: home, ...refusedSyscallsEnv(refused) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => settle({ code, stderr }));
  });
}

/** aigpt: one save, then `concurrent` at once; every one lands and nothing else is left in the folder. */
async function aigptSaves(refused: RefusedSyscall, concurrent: number): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'aigpt-unusual-fs-'));
  expect(await saveMemory(home, 'first', refused)).toEqual({ code: 0, stderr: '' });
  const saves = await Promise.all(Array.from({ length: concurrent }, (_, i) => saveMemory(home, `memory ${i}`, refused)));
  expect(saves).toEqual(Array.from({ length: concurrent }, () => ({ code: 0, stderr: '' })));
  const names = readdirSync(join(home, '.config', 'ai.syui.gpt', 'self', 'ai.syui.gpt.memory'));
  expect(names.filter((name) => RECORD_FILE.test(name))).toHaveLength(concurrent + 1);
  expect(names.filter((name) => !RECORD_FILE.test(name))).toEqual([]);
}

/** aip: init, `puts` objects at once, a run, and a verify of all of it. */
async function aipWrites(refused: RefusedSyscall, puts: number): Promise<void> {
  const env = refusedSyscallsEnv(refused);
  const dir = mkdtempSync(join(tmpdir(), 'aip-unusual-fs-'));
  expect(await aip(['init'], { cwd: dir, env })).toMatchObject({ code: 0, stderr: '' });
  const stored = await Promise.all(Array.from({ length: puts }, (_, i) => aip(['put', '--from', 'raw', '-'], { cwd: dir, env, input: `content ${i}` })));
  expect(stored.map((put) => [put.code, put.stderr])).toEqual(Array.from({ length: puts }, () => [0, '']));
  expect((await aip(['run', '--', 'true'], { cwd: dir, env })).code).toBe(0);
  const verify = await aip(['verify'], { cwd: dir, env });
  expect(verify.code).toBe(0);
  // The root state, the objects put, and the run's evidence with its output artifact.
  expect(verify.text).toMatch(new RegExp(`^${puts + 3} verified, 0 invalid$`, 'm'));
}

/** A suspended service with one note; the export command for it, into a fresh folder. */
async function exportable(): Promise<{ exportArgs: string[]; work: string; dryRun: () => number | null }> {
  const dataRoot = freshDataRoot();
  const client = await serveOn(dataRoot);
  const args = rootArgs(dataRoot);
  const serviceId = await materialisedService(client, 'exported');
  await createNote(client, serviceId, { title: 'kept' });
  await client.close();
  expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
  const work = mkdtempSync(join(tmpdir(), 'aipcs-unusual-fs-'));
  return {
    exportArgs: ['export', serviceId, '--output', join(work, 'out.jsonl'), '--expected-revision', '4', '--operation-id', OP(2), ...args],
    work,
    dryRun: () => aipcs(['import', '--input', join(work, 'out.jsonl'), '--dry-run', ...args]).status,
  };
}

describe('a file system that cannot fsync a folder', () => {
  it('aigpt: saves complete', () => aigptSaves('folder-fsync', 2));

  it('aip: init, put, run and verify complete', () => aipWrites('folder-fsync', 1));

  it('aipcs: export publishes its artefact and succeeds', async () => {
    const { exportArgs, work, dryRun } = await exportable();
    const exported = aipcs(exportArgs, { env: refusedSyscallsEnv('folder-fsync') });
    expect(exported.stderr).toBe('');
    expect(exported.status).toBe(0);
    expect(readdirSync(work)).toEqual(['out.jsonl']);
    expect(dryRun()).toBe(0);
  });
});

describe('a file system without hard links', () => {
  it('aigpt: concurrent saves all land, and nothing is left beside them', () => aigptSaves('hard-link', 8));

  it('aip: init, concurrent puts, run and verify complete', () => aipWrites('hard-link', 4));

  it('aipcs: export refuses with storage_unavailable, leaves nothing, and completes where hard links exist', async () => {
    const { exportArgs, work, dryRun } = await exportable();
    const refused = aipcs(exportArgs, { env: refusedSyscallsEnv('hard-link') });
    expect(refused.status).toBe(6);
    expect(refused.envelope.error).toMatchObject({ code: 'storage_unavailable', issues: [{ code: 'output_unavailable', path: '--output' }] });
    expect(readdirSync(work)).toEqual([]);
    expect(aipcs(exportArgs).status).toBe(0);
    expect(readdirSync(work)).toEqual(['out.jsonl']);
    expect(dryRun()).toBe(0);
  });
});
