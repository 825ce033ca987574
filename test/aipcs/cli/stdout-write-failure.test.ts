// A result that cannot be written to stdout through the built CLI: a full
// disk (ENOSPC, /dev/full) loses the result, so the command must not exit 0
// as if it had been delivered; a reader that went away (EPIPE, `| head -c1`)
// only ends the output, and the command keeps its own exit status.

import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';

const env = { PATH: process.env['PATH'] ?? '', HOME: '/nonexistent' };

/** Runs `aipcs …` with stdout on /dev/full (every write fails with ENOSPC). */
function toFullDisk(args: string[]): { status: number | null; stderr: string } {
  const full = openSync('/dev/full', 'w');
  try {
    const run = spawnSync(process.execPath, [aipcsBin(), ...args], { env, encoding: 'utf8', stdio: ['ignore', full, 'pipe'], timeout: 60_000 });
    return { status: run.status, stderr: run.stderr };
  } finally {
    closeSync(full);
  }
}

describe.skipIf(!existsSync('/dev/full'))('aipcs output that stdout cannot take', () => {
  it('an admin result lost to a full disk is internal_error output_not_written, exit 6', () => {
    const run = toFullDisk(['status']);
    expect(run.status).toBe(6);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const envelope = JSON.parse(lines[0] ?? '') as { ok: boolean; error: { code: string; issues: { code: string; path: string }[]; retryable: boolean } };
    expect(envelope.ok).toBe(false);
    expect(envelope.error.code).toBe('internal_error');
    expect(envelope.error.issues.map((issue) => [issue.code, issue.path])).toEqual([['output_not_written', 'stdout']]);
  });

  it('a config result lost to a full disk exits 2, human failures stay human', () => {
    const run = toFullDisk(['config', 'show', '--format', 'human']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^error \[internal_error\]: .*\n- stdout: /);
  });

  it('help lost to a full disk is a parser-style error naming the system code, exit 2', () => {
    const run = toFullDisk(['--help']);
    expect(run.status).toBe(2);
    // The code says why (a full disk, a failing device), as aigpt and aip say it.
    expect(run.stderr).toBe('aipcs: error: cannot write to stdout: ENOSPC\n');
  });

  it('serve whose answers a full disk loses fails while running: internal_error envelope, exit 2', () => {
    const root = mkdtempSync(join(tmpdir(), 'aipcs-serve-full-'));
    const full = openSync('/dev/full', 'w');
    try {
      const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
      const run = spawnSync(process.execPath, [aipcsBin(), 'serve', '--profile', 'sqlite', '--principal-id', 'p', '--sqlite-data-root', root], {
        env,
        encoding: 'utf8',
        input: `${JSON.stringify(initialize)}\n`,
        stdio: ['pipe', full, 'pipe'],
        timeout: 60_000,
      });
      expect(run.status).toBe(2);
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines[0]).toContain('stdout could not be written (ENOSPC)');
      expect(JSON.parse(lines.at(-1) ?? '')).toEqual({
        ok: false,
        result: null,
        error: { code: 'internal_error', message: 'Server could not be started safely.', issues: [], retryable: false },
      });
    } finally {
      closeSync(full);
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a reader that went away only ends the output: exit 0, stderr silent', async () => {
    const child = spawn(process.execPath, [aipcsBin(), '--help'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    // Close our end at once: the help's write meets EPIPE (or, at worst, lands before the close).
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr += chunk));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(status).toBe(0);
    expect(stderr).toBe('');
  });
});
