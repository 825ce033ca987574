// `aipcs serve` and the administration commands on PostgreSQL with an
// inherited environment that says otherwise than the configuration: PG*
// variables naming another host, port, role and database (node-postgres
// reads them for what a DSN leaves out, docs/postgresql.md), PGOPTIONS asking
// for another time zone and search path, and an odd process time zone and
// locale. What the DSN names wins, the session settings stay pinned, and
// every timestamp is UTC. libpq's keyword/value DSN form is read as such.

import { afterEach, describe, expect, it } from 'vitest';
import { aipcs } from '../../../support/aipcs-admin.js';
import { startAipcs, type AipcsClient } from '../../../support/aipcs-client.js';
import type { ClusterInfo } from '../../../support/postgres-cluster.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../../support/postgres.js';

expectClustersUnderCi();

/** Values that would each break the connection or the results if they were used. */
const hostileEnvironment: Record<string, string> = {
  PGHOST: '/nonexistent-socket-folder',
  PGPORT: '1',
  PGUSER: 'nobody_at_all',
  PGPASSWORD: 'wrong',
  PGDATABASE: 'no_such_database',
  PGOPTIONS: '-c TimeZone=Pacific/Kiritimati -c search_path=public -c DateStyle=SQL,DMY',
  PGTZ: 'America/St_Johns',
  PGAPPNAME: 'not-aipcs',
  TZ: 'Pacific/Kiritimati',
  LANG: 'tr_TR.UTF-8',
  LC_ALL: 'tr_TR.UTF-8',
};

const MICROSECOND_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s under an inherited environment', (_version, cluster: ClusterInfo) => {
  let db: TestDatabase | undefined;
  let client: AipcsClient | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
    await db?.drop();
    db = undefined;
  });

  it('connects where the DSN says, keeps UTC timestamps and ignores PGOPTIONS', async () => {
    db = await createTestDatabase(cluster);
    const profile = ['--profile', 'postgresql', '--principal-id', 'agent', '--postgres-dsn-env', 'AIPCS_TEST_POSTGRES_DSN'];
    const env = { ...hostileEnvironment, AIPCS_TEST_POSTGRES_DSN: db.url };
    client = await startAipcs(profile, env);
    const seeded = await client.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'knowledge', intent_description: 'Inherited environment.', idempotency_key: 'seed-1' });
    expect(seeded.ok).toBe(true);
    const service = seeded.result as Record<string, unknown>;
    for (const field of ['created_at', 'updated_at', 'last_activity_at']) expect(service[field]).toMatch(MICROSECOND_UTC);
    // The stored instant is now, whatever zone the session was asked to use.
    const created = Date.parse(String(service['created_at']));
    expect(Math.abs(created - Date.now())).toBeLessThan(10 * 60_000);
    await client.close();
    client = undefined;

    const listed = aipcs(['service', 'list', ...profile], { env });
    expect(listed.stderr).toBe('');
    expect(listed.status).toBe(0);
    const services = (listed.envelope.result?.['services'] ?? []) as Record<string, unknown>[];
    expect(services.map((entry) => entry['created_at'])).toEqual([service['created_at']]);
    const human = aipcs(['service', 'list', '--format', 'human', ...profile], { env });
    expect(human.status).toBe(0);
    expect(human.stdout).toContain(`services[0].created_at: ${String(service['created_at'])}\n`);
  });

  it("takes libpq's keyword/value DSN (host=… dbname=…) as it takes the URI, PG* variables notwithstanding", async () => {
    db = await createTestDatabase(cluster);
    const url = new URL(db.url);
    // The driver read this form as a relative URL: host "base", the whole text as the database name, the role from PGUSER.
    const keywordValue = `host=${url.hostname} port = ${url.port} dbname='${url.pathname.slice(1)}' user=${decodeURIComponent(url.username)} application_name='aipcs keyword\\'s'`;
    const profile = ['--profile', 'postgresql', '--principal-id', 'agent', '--postgres-dsn-env', 'AIPCS_TEST_POSTGRES_DSN'];
    const env = { ...hostileEnvironment, AIPCS_TEST_POSTGRES_DSN: keywordValue };
    client = await startAipcs(profile, env);
    const seeded = await client.call('aipcs_service_seed', { domain_name: 'keyword', domain_class: 'knowledge', intent_description: 'Keyword/value DSN.', idempotency_key: 'seed-kv' });
    expect(seeded.ok, JSON.stringify(seeded.error)).toBe(true);
    await client.close();
    client = undefined;
    const listed = aipcs(['service', 'list', ...profile], { env: { ...env, AIPCS_TEST_POSTGRES_DSN: db.url } });
    expect((listed.envelope.result?.['services'] as Record<string, unknown>[]).map((entry) => entry['domain_name'])).toEqual(['keyword']);
  });
});
