// Vitest global setup: starts the PostgreSQL clusters the storage suites run
// against and hands their connection strings to the tests. Under CI=true a
// cluster that cannot start fails the run instead of skipping its tests.

import type { TestProject } from 'vitest/node';
import { requestedVersions, startCluster, type ClusterInfo, type RunningCluster } from './postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresClusters: ClusterInfo[];
  }
}

const running: RunningCluster[] = [];

export async function setup(project: TestProject): Promise<void> {
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
}
