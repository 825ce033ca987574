// Shared helpers of the aigpt tests: temp homes under os.tmpdir(), an
// Environment pointing the config there, fixture writers, and spawning the
// built CLI. Never writes into the source tree.

import { spawn } from 'node:child_process';
import { mkdtempSync, promises as fs, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtBin } from '../support/bins.js';
import { nodeCommand } from '../support/resource-limits.js';
import type { Environment } from '../../src/aigpt/config/config.js';
import { recordTree, type RecordTree } from '../../src/aigpt/core/record-paths.js';

export interface TempHome {
  readonly root: string;
  readonly home: string;
  readonly configHome: string;
  /** `{configHome}/ai.syui.gpt` */
  readonly appDir: string;
  readonly configFile: string;
  readonly environment: Environment;
  /** Env for child processes: this home, no inherited XDG. */
  readonly childEnv: NodeJS.ProcessEnv;
  cleanup(): void;
}

export function makeTempHome(): TempHome {
  const root = mkdtempSync(join(tmpdir(), 'aigpt-test-'));
  const home = join(root, 'home');
  const configHome = join(root, 'config');
  const env = { HOME: home, XDG_CONFIG_HOME: configHome };
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv['AIGPT_TEST_FAULT_PAUSE'];
  return {
    root,
    home,
    configHome,
    appDir: join(configHome, 'ai.syui.gpt'),
    configFile: join(configHome, 'ai.syui.gpt', 'config.json'),
    environment: { env, platform: 'linux', homedir: () => home, cwd: () => root },
    childEnv,
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** A temp home with an empty `memory` folder under its root, for the lock tests. */
export async function makeTempMemoryFolder(): Promise<{ home: TempHome; dir: string }> {
  const home = makeTempHome();
  const dir = join(home.root, 'memory');
  await fs.mkdir(dir);
  return { home, dir };
}

export async function writeConfig(home: TempHome, bot: Record<string, unknown> | string): Promise<void> {
  await fs.mkdir(home.appDir, { recursive: true });
  await fs.writeFile(home.configFile, typeof bot === 'string' ? bot : JSON.stringify({ bot }, null, 2));
}

export function treeFor(base: string, identity: string): RecordTree {
  return recordTree(base, identity);
}

/** Memory file names and contents, sorted by name (helper files excluded). */
export async function snapshotMemories(dir: string): Promise<[string, string][]> {
  const names = (await fs.readdir(dir)).filter((name) => name.endsWith('.json') && !name.startsWith('.')).sort();
  return Promise.all(names.map(async (name): Promise<[string, string]> => [name, await fs.readFile(join(dir, name), 'utf8')]));
}

export async function listDir(dir: string): Promise<string[]> {
  return (await fs.readdir(dir)).sort();
}

export function aigptBin(): string {
  return builtBin('aigpt/cli/main.js');
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built CLI to completion. */
export function runAigpt(args: readonly string[], env: NodeJS.ProcessEnv, options: { cwd?: string; input?: string | Buffer } = {}): Promise<RunResult> {
  return runToEnd(process.execPath, [aigptBin(), ...args], { env, cwd: options.cwd ?? tmpdir() }, options.input ?? '');
}

/** Runs `command` to completion with `input` on its stdin, collecting its output as text. */
export function runToEnd(command: string, args: readonly string[], spawnOptions: { env: NodeJS.ProcessEnv; cwd: string }, input: string | Buffer = ''): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...spawnOptions, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** Runs the built CLI with its stdout closed from the start, as `aigpt ... | head -0` would leave it. */
export function runAigptStdoutClosed(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [aigptBin(), ...args], { env, cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
    // Closing our end makes every write of the child fail with EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** The golden memory record of spec 3.5 (290 bytes). */
export const GOLDEN_MEMORY = `{
  "uri": "at://did:plc:xxx/ai.syui.gpt.memory/3mfyouuy62222",
  "value": {
    "$type": "ai.syui.gpt.memory",
    "content": {
      "$type": "ai.syui.gpt.memory#markdown",
      "text": "syuiはRustを好む"
    },
    "createdAt": "2026-03-01T12:00:00Z",
    "did": "did:plc:xxx"
  }
}`;

/** A hand-written memory record in the seed's key order (not sorted), as another writer might produce. */
export function seedOrderMemory(did: string, tid: string, text: string, createdAt = '2026-03-01T12:00:00Z'): string {
  return `{
  "uri": "at://${did}/ai.syui.gpt.memory/${tid}",
  "value": {
    "$type": "ai.syui.gpt.memory",
    "did": "${did}",
    "content": {
      "$type": "ai.syui.gpt.memory#markdown",
      "text": ${JSON.stringify(text)}
    },
    "createdAt": "${createdAt}"
  }
}
`;
}

export interface ServerChild {
  readonly child: import('node:child_process').ChildProcessWithoutNullStreams;
  /** Everything the child wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the first stderr text matching `pattern`. */
  waitForStderr(pattern: RegExp): Promise<string>;
  /** Resolves with the JSON-RPC response carrying `id`. */
  response(id: number): Promise<Record<string, unknown>>;
  send(message: unknown): void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `aigpt server` and speaks raw newline-delimited JSON-RPC to it; optionally under a file size limit (test/support/file-size-limit.ts). */
export function startServerChild(env: NodeJS.ProcessEnv, options: { readonly fileSizeLimitBlocks?: number } = {}): ServerChild {
  const [command, args] = nodeCommand([aigptBin(), 'server'], { fileSizeBlocks: options.fileSizeLimitBlocks });
  const child = spawn(command, args, { env, cwd: tmpdir(), stdio: 'pipe' });
  let err = '';
  let out = '';
  const responses = new Map<number, Record<string, unknown>>();
  const waiters: (() => void)[] = [];
  const wake = (): void => {
    for (const waiter of waiters.splice(0)) waiter();
  };
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
    wake();
  });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    let newline;
    while ((newline = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, newline);
      out = out.slice(newline + 1);
      const message = JSON.parse(line) as Record<string, unknown>;
      if (typeof message['id'] === 'number') responses.set(message['id'], message);
    }
    wake();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      resolve({ code, signal });
      wake();
    });
  });
  const until = <T>(probe: () => T | undefined, what: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const found = probe();
        if (found !== undefined) resolve(found);
        else if (child.exitCode !== null || child.signalCode !== null) reject(new Error(`server exited before ${what}; stderr: ${err}`));
        else waiters.push(check);
      };
      check();
    });
  return {
    child,
    stderr: () => err,
    waitForStderr: (pattern) => until(() => pattern.exec(err)?.[0], `stderr matched ${pattern}`),
    response: (id) => until(() => responses.get(id), `response ${id}`),
    send: (message) => child.stdin.write(`${JSON.stringify(message)}\n`),
    exited,
  };
}

export const INITIALIZE_REQUEST = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'aigpt-test', version: '0' } },
};
export const INITIALIZED_NOTIFICATION = { jsonrpc: '2.0', method: 'notifications/initialized' };

/**
 * A config whose records live under `<root>/c`, and `count` memory files in
 * its memory folder named `note-00000.json`, … (in that selection order).
 */
export async function writeNumberedMemories(home: TempHome, count: number): Promise<{ memoryDir: string; names: string[] }> {
  await writeConfig(home, { path: join(home.root, 'c') });
  const memoryDir = join(home.root, 'c', 'self', 'ai.syui.gpt.memory');
  await fs.mkdir(memoryDir, { recursive: true });
  const names = Array.from({ length: count }, (_, i) => `note-${String(i).padStart(5, '0')}.json`);
  for (let i = 0; i < names.length; i += 500) {
    await Promise.all(names.slice(i, i + 500).map((name) => fs.writeFile(join(memoryDir, name), seedOrderMemory('self', 'x', name))));
  }
  return { memoryDir, names };
}
