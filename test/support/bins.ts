// Paths of the built command-line entry points. Tests run the real bins from
// dist/ as child processes, the way a user or an MCP client does; `npm test`
// builds before it runs them.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export function builtBin(relative: string): string {
  const path = join(repoRoot, 'dist', 'src', relative);
  if (!existsSync(path)) throw new Error(`${relative} is not built: run npm run build first`);
  return path;
}

export const aipcsBin = (): string => builtBin('aipcs/cli/main.js');

export interface GuardedRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a built bin to completion with `node`. Used where the defect under
 * test made the child block forever: the kill after `timeoutMs` is only a
 * safety net, so a regression fails (signal set, no exit code) instead of
 * leaving a process behind.
 */
export function runGuarded(bin: string, args: readonly string[], options: { readonly cwd: string; readonly env?: NodeJS.ProcessEnv; readonly timeoutMs?: number }): Promise<GuardedRun> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: options.cwd, ...(options.env ? { env: options.env } : {}), stdio: ['ignore', 'pipe', 'pipe'], timeout: options.timeoutMs ?? 30_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolveRun({ code, signal, stdout, stderr }));
  });
}

/** Makes a FIFO at `path` (mkfifo(1)); throws when it cannot. */
export function mkfifo(path: string): void {
  const made = spawnSync('mkfifo', [path]);
  if (made.status !== 0) throw new Error(`mkfifo ${path} failed: ${made.stderr.toString()}`);
}
