// The PostgreSQL driver (`pg`) is an optional dependency, as the seed has it
// ("the PostgreSQL adapter is an explicit optional dependency"): without it
// the SQLite profile serves as usual and the postgresql profile fails closed
// the way the operations spec gives for a missing driver (§1.6: serve answers
// internal_error and exits 2; §1.8: the registry shows as unavailable) —
// against a live cluster that the same commands reach once the driver is
// there. D38.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, rootArgs } from '../../support/aipcs-admin.js';
import { repoRoot } from '../../support/bins.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters } from '../../support/postgres.js';
import { envWithoutPackages } from '../../support/refuse-modules.js';

const DSN_ENV = 'AIPCS_TEST_OPTIONAL_DRIVER_DSN';
const pgArgs = ['--profile', 'postgresql', '--principal-id', 'local-agent', '--postgres-dsn-env', DSN_ENV, '--postgres-connect-timeout-seconds', '5'];

describe('the PostgreSQL driver is optional', () => {
  it('is listed as an optional dependency of the package', () => {
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    expect(Object.keys(manifest['optionalDependencies'] ?? {})).toEqual(['pg']);
    expect(manifest['dependencies']?.['pg']).toBeUndefined();
  });

  it('without it, the sqlite profile serves and is inspected as usual', () => {
    const withoutDriver = envWithoutPackages(['pg']);
    const dataRoot = freshDataRoot();
    const serve = aipcs(['serve', ...rootArgs(dataRoot)], { env: withoutDriver });
    expect(serve.status, serve.stderr).toBe(0);
    const status = aipcs(['status', ...rootArgs(dataRoot)], { env: withoutDriver });
    expect(status.status, status.stderr).toBe(0);
    expect(status.envelope.result).toMatchObject({ registry: { status: 'ready' }, overall: 'ready' });
  });

  const clusters = postgresClusters();
  expectClustersUnderCi();
  for (const cluster of clusters.slice(0, 1)) {
    it(`without it, the postgresql profile fails closed against a live PostgreSQL ${cluster.version}`, async () => {
      const database = await createTestDatabase(cluster);
      const env = { [DSN_ENV]: database.url };
      try {
        const reachable = aipcs(['status', ...pgArgs], { env });
        expect(reachable.envelope.result).toMatchObject({ registry: { status: 'uninitialised' } });

        const withoutDriver = { ...env, ...envWithoutPackages(['pg']) };
        const status = aipcs(['status', ...pgArgs], { env: withoutDriver });
        expect(status.status, status.stderr).toBe(0);
        expect(status.envelope.result).toMatchObject({ registry: { status: 'unavailable', issue_code: 'storage_unavailable' }, overall: 'unavailable' });
        const serve = aipcs(['serve', ...pgArgs], { env: withoutDriver });
        expect(serve.status).toBe(2);
        expect(serve.envelope.error).toMatchObject({ code: 'internal_error', message: 'Server could not be started safely.' });
        expect(`${serve.stdout}${serve.stderr}`).not.toContain(database.url);
      } finally {
        await database.drop();
      }
    });
  }
});
