// Vitest global setup: starts the PostgreSQL clusters the storage suites run
// against and hands their connection strings to the tests. Under CI=true a
// cluster that cannot start fails the run instead of skipping its tests.
// Every temporary folder of the run (tests, servers and CLIs they start) is
// made under one run folder, removed at the end, so runs leave nothing in
// the machine's temporary directory.

import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { requestedVersions, startCluster, type ClusterInfo, type RunningCluster } from './postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresClusters: ClusterInfo[];
  }
}

const running: RunningCluster[] = [];
let runFolder: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  runFolder = mkdtempSync(join(tmpdir(), 'aipcs-test-run-'));
  // The clusters run as an unprivileged user, who must reach their folders below.
  chmodSync(runFolder, 0o755);
  // Test workers and every child they spawn inherit it; os.tmpdir() reads it.
  process.env['TMPDIR'] = runFolder;
  const strict = process.env['CI'] === 'true';
  const infos: ClusterInfo[] = [];
  for (const version of requestedVersions()) {
    try {
      const cluster = await startCluster(version);
      running.push(cluster);
      infos.push({ version: cluster.version, adminUrl: cluster.adminUrl, serverVersion: cluster.serverVersion });
      process.stderr.write(`[test setup] PostgreSQL ${cluster.serverVersion} started for the storage suites\n`);
    } catch (error) {
      if (strict) throw error;
      process.stderr.write(`[test setup] PostgreSQL ${version} unavailable, its tests are skipped: ${String(error)}\n`);
    }
  }
  project.provide('postgresClusters', infos);
}

export async function teardown(): Promise<void> {
  await Promise.all(running.splice(0).map((cluster) => cluster.stop()));
  if (runFolder) rmSync(runFolder, { recursive: true, force: true });
}
