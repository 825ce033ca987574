// The bins under an open files limit too low to load their modules (Node
// reads a module graph's files at once; the MCP SDK's take about 150
// descriptors). `aipcs serve`: before, the load's EMFILE surfaced as the
// generic `internal_error` "The request could not be completed safely." with
// nothing to say why; now it is a start-up failure whose reason --log-level
// info names. Every command: below what even the command tree needs, a raw
// Node stack trace, sometimes "Cannot find package" for a package that is
// there; now one line.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcsBin, builtBin } from '../support/bins.js';
import { nodeCommand } from '../support/resource-limits.js';

const STARTUP_FAILURE = '{"ok":false,"result":null,"error":{"code":"internal_error","message":"Server could not be started safely.","issues":[],"retryable":false}}\n';

describe('serve under a low open files limit', () => {
  it('refuses to start with its start-up envelope, and says why at --log-level info', () => {
    const [command, args] = nodeCommand([aipcsBin(), 'serve', '--log-level', 'info'], { openFiles: 90 });
    const run = spawnSync(command, args, { input: '', encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`aipcs info: start-up refused: the server's modules could not be loaded: too many open files (raise the open files limit, ulimit -n)\n${STARTUP_FAILURE}`);
  });

  it('every bin below what its command tree needs: one line naming the limit, exit 1, no stack trace', () => {
    const home = mkdtempSync(join(tmpdir(), 'open-files-limit-'));
    try {
      for (const [name, bin, args] of [
        ['aipcs', aipcsBin(), ['status']],
        ['aigpt', builtBin('aigpt/cli/main.js'), ['read-core']],
        ['aip', builtBin('aip/cli/main.js'), ['--help']],
      ] as const) {
        const [command, commandArgs] = nodeCommand([bin, ...args], { openFiles: 24 });
        const run = spawnSync(command, commandArgs, { cwd: home, env: { PATH: process.env['PATH'] ?? '', HOME: home }, input: '', encoding: 'utf8', timeout: 30_000 });
        expect([name, run.status, run.stdout, run.stderr]).toEqual([name, 1, '', `${name}: cannot load its modules: too many open files (raise the open files limit, ulimit -n)\n`]);
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('aigpt: the CLI commands run without the MCP edge; the server says it cannot load its modules', () => {
    const home = mkdtempSync(join(tmpdir(), 'open-files-limit-'));
    try {
      const aigpt = (args: string[]) => {
        const [command, commandArgs] = nodeCommand([builtBin('aigpt/cli/main.js'), ...args], { openFiles: 90 });
        return spawnSync(command, commandArgs, { cwd: home, env: { PATH: process.env['PATH'] ?? '', HOME: home }, input: '', encoding: 'utf8', timeout: 30_000 });
      };
      expect(aigpt(['save-memory', 'kept under a low limit']).status).toBe(0);
      expect(aigpt(['read-memory']).stdout).toContain('kept under a low limit');
      const server = aigpt(['server']);
      expect([server.status, server.stdout, server.stderr]).toEqual([1, '', 'aigpt: cannot load its modules: too many open files (raise the open files limit, ulimit -n)\n']);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
