// On a file system without hard links (FAT, exFAT: link(2) fails with
// EPERM), aigpt and aip publish by their fallbacks, exclusive create or a
// check and rename under their lock, and concurrent writers still lose
// nothing. An aipcs export publishes only by hard link (operations spec
// 1.9.4): it refuses with storage_unavailable, leaves no file, and the same
// operation completes on a file system that has them.

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aigptBin } from '../aigpt/support.js';
import { aip } from '../aip/support/cli.js';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../support/aipcs-admin.js';
import { refusedSyscallsEnv } from '../support/refused-syscalls.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

function saveMemory(home: string, content: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((settle, reject) => {
    const child = spawn(process.execPath, [aigptBin(), 'save-memory', content], {
      env: { PATH: process.env['PATH'] ?? '', HOME: home, ...refusedSyscallsEnv('hard-link') },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => settle({ code, stderr }));
  });
}

describe('a file system without hard links', () => {
  it('aigpt: concurrent saves all land, and nothing is left beside them', async () => {
    const home = mkdtempSync(join(tmpdir(), 'aigpt-no-links-'));
    expect(await saveMemory(home, 'first')).toEqual({ code: 0, stderr: '' });
    const saves = await Promise.all(Array.from({ length: 8 }, (_, i) => saveMemory(home, `memory ${i}`)));
    expect(saves).toEqual(Array.from({ length: 8 }, () => ({ code: 0, stderr: '' })));
    const folder = join(home, '.config', 'ai.syui.gpt', 'self', 'ai.syui.gpt.memory');
    const names = readdirSync(folder);
    expect(names.filter((name) => /^[2-7a-z]{13}\.json$/.test(name))).toHaveLength(9);
    expect(names.filter((name) => !/^[2-7a-z]{13}\.json$/.test(name))).toEqual([]);
  });

  it('aip: init, concurrent puts, run and verify complete', async () => {
    const env = refusedSyscallsEnv('hard-link');
    const dir = mkdtempSync(join(tmpdir(), 'aip-no-links-'));
    expect((await aip(['init'], { cwd: dir, env })).code).toBe(0);
    const puts = await Promise.all(Array.from({ length: 4 }, (_, i) => aip(['put', '--from', 'raw', '-'], { cwd: dir, env, input: `content ${i}` })));
    expect(puts.map((put) => [put.code, put.stderr])).toEqual(Array.from({ length: 4 }, () => [0, '']));
    expect((await aip(['run', '--', 'true'], { cwd: dir, env })).code).toBe(0);
    const verify = await aip(['verify'], { cwd: dir, env });
    expect(verify.code).toBe(0);
    expect(verify.text).toMatch(/^7 verified, 0 invalid$/m);
  });

  it('aipcs: export refuses with storage_unavailable, leaves nothing, and completes where hard links exist', async () => {
    const dataRoot = freshDataRoot();
    const client = await serveOn(dataRoot);
    const args = rootArgs(dataRoot);
    const serviceId = await materialisedService(client, 'exported');
    await createNote(client, serviceId, { title: 'kept' });
    await client.close();
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
    const work = mkdtempSync(join(tmpdir(), 'aipcs-no-links-'));
    const exportArgs = ['export', serviceId, '--output', join(work, 'out.jsonl'), '--expected-revision', '4', '--operation-id', OP(2), ...args];
    const refused = aipcs(exportArgs, { env: refusedSyscallsEnv('hard-link') });
    expect(refused.status).toBe(6);
    expect(refused.envelope.error).toMatchObject({ code: 'storage_unavailable', issues: [{ code: 'output_unavailable', path: '--output' }] });
    expect(readdirSync(work)).toEqual([]);
    const exported = aipcs(exportArgs);
    expect(exported.status).toBe(0);
    expect(readdirSync(work)).toEqual(['out.jsonl']);
  });
});
