// Test helpers over the clusters started by the global setup: each caller
// gets its own fresh database owned by a fresh non-superuser role, which is
// what an operator provisions for AIPCS.

import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import pg from 'pg';
import type { ClusterInfo } from './postgres-cluster.js';

export function postgresClusters(): ClusterInfo[] {
  return inject('postgresClusters');
}

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(cluster: ClusterInfo): Promise<TestDatabase> {
  const suffix = randomBytes(6).toString('hex');
  const name = `aipcs_test_${suffix}`;
  const role = `aipcs_role_${suffix}`;
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE`);
    await admin.query(`CREATE DATABASE ${name} OWNER ${role} TEMPLATE template0 ENCODING 'UTF8'`);
    await admin.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
  } finally {
    await admin.end();
  }
  const url = cluster.adminUrl.replace('aipcs_admin@', `${role}@`).replace(/\/postgres$/, `/${name}`);
  return {
    url,
    name,
    async drop() {
      const client = new pg.Client({ connectionString: cluster.adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await client.query(`DROP ROLE IF EXISTS ${role}`);
      } finally {
        await client.end();
      }
    },
  };
}
