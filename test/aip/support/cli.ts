// Runs the built `aip` bin (dist/src/aip/cli/main.js) as a real child
// process, the way a user does; `npm test` builds before the tests run.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeCommand } from '../../support/resource-limits.js';

export const AIP_BIN = resolve(dirname(fileURLToPath(import.meta.url)), '../../../dist/src/aip/cli/main.js');

export function requireBuiltBin(): void {
  if (!existsSync(AIP_BIN)) throw new Error('dist/src/aip/cli/main.js is missing: run `npx tsc -p tsconfig.build.json` first');
}

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  readonly text: string;
}

export interface CliOptions {
  readonly cwd: string;
  readonly input?: Uint8Array | string;
  /** Node options before the bin (e.g. a `--import` preload) and extra environment. */
  readonly nodeArgs?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /** Runs under a file size limit in blocks (test/support/resource-limits.ts): a write past it fails as on a full disk. */
  readonly fileSizeLimitBlocks?: number;
}

export function aip(args: readonly string[], options: CliOptions): Promise<CliResult> {
  return new Promise((settle, reject) => {
    const [command, commandArgs] = nodeCommand([...(options.nodeArgs ?? []), AIP_BIN, ...args], { fileSizeBlocks: options.fileSizeLimitBlocks });
    const child = spawn(command, commandArgs, {
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.env ? { env: { ...process.env, ...options.env } } : {}),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const stdout = Buffer.concat(out);
      settle({ code, signal, stdout, stderr: Buffer.concat(err).toString('utf8'), text: stdout.toString('utf8') });
    });
    // A command that refuses its input (too large) exits without reading the rest: EPIPE is its answer, not a failure of the test.
    child.stdin.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') reject(error);
    });
    child.stdin.end(options.input ?? '');
  });
}
