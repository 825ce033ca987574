// Ctrl-C during a long export or import leaves nothing behind: the export's
// `.aipcs-export-*.tmp` (ops spec §1.9.4: "the temp file is always removed")
// and the import's private `aipcs-bundle-*` spool (§5.9: "removed
// afterwards") were removed on every error path but not on a signal, whose
// default action ends the process without unwinding. The signal still ends
// the command (SIGINT), and the interrupted export converges on its retry.
// Ctrl-C at an interactive confirmation works the same way: the prompt
// reads the terminal off the event loop's thread, so the signal is handled.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, key, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import { aipcsBin } from '../../support/bins.js';

const OP = (n: number): string => `a7c10000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

/** Runs the built CLI and sends SIGINT once `started` says the work is under way; resolves with how it ended. */
function interrupted(args: string[], env: Record<string, string>, started: () => boolean): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [aipcsBin(), ...args], { env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', ...env }, stdio: 'ignore' });
    const poll = setInterval(() => {
      if (started()) {
        clearInterval(poll);
        child.kill('SIGINT');
      }
    }, 5);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearInterval(poll);
      resolve({ code, signal });
    });
  });
}

/** Whether `directory` holds an entry named with `prefix` of at least `bytes` (a folder: any size). */
function holds(directory: string, prefix: string, bytes: number): boolean {
  return readdirSync(directory).some((name) => {
    if (!name.startsWith(prefix)) return false;
    const stats = statSync(join(directory, name), { throwIfNoEntry: false });
    return stats !== undefined && (stats.isDirectory() || stats.size >= bytes);
  });
}

/**
 * Python's pty module drives the interactive import: it waits for the
 * confirmation prompt, types Ctrl-C and prints how the command ended
 * (`signal 2`), or `hung` when it has not ended 10 s later.
 */
const CTRL_C_AT_PROMPT = `
import os, pty, sys, time, select
bin, artefact, root, spools = sys.argv[1:5]
env = dict(os.environ, TMPDIR=spools)
pid, fd = pty.fork()
if pid == 0:
    os.execve(sys.argv[5], [sys.argv[5], bin, 'import', '--input', artefact, '--profile', 'sqlite', '--principal-id', 'local-agent', '--sqlite-data-root', root, '--format', 'human'], env)
seen = b''
deadline = time.time() + 60
while b'Proceed?' not in seen and time.time() < deadline:
    if select.select([fd], [], [], 0.2)[0]:
        seen += os.read(fd, 4096)
os.write(fd, b'\x03')
deadline = time.time() + 10
while time.time() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print('signal %d' % os.WTERMSIG(status) if os.WIFSIGNALED(status) else 'exit %d' % os.WEXITSTATUS(status))
        sys.exit(0)
    if select.select([fd], [], [], 0.1)[0]:
        try:
            os.read(fd, 4096)
        except OSError:
            pass
os.kill(pid, 9)
print('hung')
`;
const hasPythonPty = spawnSync('python3', ['-c', 'import pty'], { stdio: 'ignore' }).status === 0;

describe('Ctrl-C during export and import (built CLI)', () => {
  it('removes the export temp file and the import spool, and the export converges on retry', { timeout: 180_000 }, async () => {
    const dataRoot = freshDataRoot();
    const args = rootArgs(dataRoot);
    const client = await serveOn(dataRoot);
    let serviceId: string;
    try {
      serviceId = await materialisedService(client, 'interrupted');
      // About 57 KB per record (within §6.3's 64 KiB), and as much again in history: an artefact of about 90 MB.
      const aliases = Array.from({ length: 120 }, (_, index) => `${index}`.padEnd(200, 'a'));
      for (let n = 0; n < 800; n++) {
        const created = await client.call('aipcs_record_create', {
          service_id: serviceId,
          entity_name: 'note',
          record: { title: `${n}`.padEnd(16_000, 't'), detail: `${n}`.padEnd(16_000, 'd'), aliases },
          idempotency_key: key('create'),
        });
        expect(created.ok, JSON.stringify(created.error)).toBe(true);
      }
    } finally {
      await client.close();
    }
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);

    const out = mkdtempSync(join(tmpdir(), 'aipcs-interrupted-export-'));
    const output = join(out, 'notes.jsonl');
    const exportArgs = ['export', serviceId, '--output', output, '--expected-revision', '4', '--operation-id', OP(2), ...args];
    const stopped = await interrupted(exportArgs, {}, () => holds(out, '.aipcs-export-', 1 << 20));
    expect(stopped).toEqual({ code: null, signal: 'SIGINT' });
    expect(readdirSync(out)).toEqual([]);

    const retried = aipcs(exportArgs);
    expect(retried.status, retried.stdout).toBe(0);
    expect(readdirSync(out)).toEqual(['notes.jsonl']);

    const spools = mkdtempSync(join(tmpdir(), 'aipcs-interrupted-import-'));
    const importArgs = ['import', '--input', output, '--operation-id', OP(3), '--yes', ...rootArgs(freshDataRoot())];
    const halted = await interrupted(importArgs, { TMPDIR: spools }, () => holds(spools, 'aipcs-bundle-', 0));
    expect(halted).toEqual({ code: null, signal: 'SIGINT' });
    expect(readdirSync(spools)).toEqual([]);

    // Ctrl-C at the interactive confirmation (after validation, the spool in place).
    if (!hasPythonPty) return;
    const root = freshDataRoot();
    await (await serveOn(root)).close();
    const atPrompt = spawnSync('python3', ['-c', CTRL_C_AT_PROMPT, aipcsBin(), output, root, spools, process.execPath], { encoding: 'utf8', timeout: 120_000 });
    expect(atPrompt.stdout.trim(), atPrompt.stderr).toBe('signal 2');
    expect(readdirSync(spools)).toEqual([]);
  });
});
