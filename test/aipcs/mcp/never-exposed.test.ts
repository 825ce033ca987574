// What AIPCS must never expose (contract §3.5, operations §2.9):
// storage made unusable under a running server (SQLite files replaced or
// removed; PostgreSQL schema dropped, backends terminated) still answers
// with contract codes and fixed messages, no path, SQL, schema, principal or
// DSN anywhere, stderr only the fixed words of each storage fault
// (decisions-aipcs-config.md 35), and the server keeps serving; a guessed
// `--postgres-dsn=<dsn>` option is refused without printing the DSN.

import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { aipcs } from '../../support/aipcs-admin.js';
import { freshDataRoot, sqliteArgs, startAipcs, type AipcsClient, type Envelope } from '../../support/aipcs-client.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, queryRows } from '../../support/postgres.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

const PRINCIPAL = 'principal-Zq9x-walk';
const PASSWORD = 'pw-S3cret-walk';

/** Everything §3.5 / §2.9 forbid, as it would show up in a leak. */
function expectNothingInternal(text: string, secrets: readonly string[]): void {
  for (const secret of secrets) expect(text).not.toContain(secret);
  expect(text).not.toMatch(/svc_[0-9a-f]{32}|aipcs_registry|__aipcs_|\.sqlite|service-stores|SQLITE_|SELECT |INSERT |postgres(ql)?:\/\/|\n\s+at |Error:/);
}

/** stderr holds nothing but one warning in fixed words per failed call (decisions-aipcs-config.md 35). */
function expectOnlyFaultLines(stderr: string, reason: string): void {
  const lines = stderr.split('\n');
  expect(lines.pop()).toBe('');
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(line).toMatch(new RegExp(`^aipcs warn: aipcs_[a-z_]+: storage unavailable: ${reason}$`));
}

async function materialisedService(client: AipcsClient): Promise<string> {
  const seeded = await client.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'knowledge', intent_description: 'Notes.', idempotency_key: 'seed-1' });
  const serviceId = seeded.result?.['service_id'] as string;
  const designed = await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design-1' });
  expect(designed.ok).toBe(true);
  const materialised = await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'mat-1' });
  expect(materialised.ok).toBe(true);
  expect((await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'kept' }, idempotency_key: 'c-1' })).ok).toBe(true);
  return serviceId;
}

/** Calls that reach the registry and the service store, and their raw text as the client saw it. */
async function probe(client: AipcsClient, serviceId: string): Promise<{ codes: Record<string, string>; text: string }> {
  const calls: [string, Record<string, unknown>][] = [
    ['aipcs_service_list', {}],
    ['aipcs_record_list', { service_id: serviceId, entity_name: 'note' }],
    ['aipcs_record_search', { service_id: serviceId, entity_name: 'note', filters: { title: 'kept' } }],
    ['aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'new' }, idempotency_key: 'c-2' }],
    ['aipcs_service_summary', { service_id: serviceId, sample: 3 }],
    ['aipcs_maintenance_scan', { service_id: serviceId }],
  ];
  const codes: Record<string, string> = {};
  let text = '';
  for (const [name, args] of calls) {
    const envelope: Envelope = await client.call(name, args);
    codes[name] = envelope.ok ? 'ok' : (envelope.error?.code ?? '');
    if (!envelope.ok) {
      if (envelope.error?.code === 'storage_unavailable') expect(envelope.error.message).toBe('Storage is unavailable.');
      text += JSON.stringify(envelope);
    }
  }
  return { codes, text };
}

describe('aipcs CLI parser errors', () => {
  it('name an unknown option without the value glued to it (a DSN passed as --postgres-dsn=...)', () => {
    const dsn = `postgresql://aipcs:${PASSWORD}@db.example/aipcs`;
    for (const command of [['status'], ['serve'], ['config', 'show']]) {
      const run = aipcs([...command, `--postgres-dsn=${dsn}`]);
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(`${command.join(' ')}: error: unknown option '--postgres-dsn'`);
      expect(run.stderr).not.toContain(PASSWORD);
    }
    const short = aipcs(['status', `-p${PASSWORD}`]);
    expect(short.status).toBe(2);
    expect(short.stderr).toContain("aipcs status: error: unknown option '-p'");
    expect(short.stderr).not.toContain(PASSWORD);
  });
});

describe('aipcs serve on SQLite whose files are damaged while it runs', () => {
  let client: AipcsClient;
  let dataRoot: string;
  afterAll(async () => client?.close());

  it('answers storage_unavailable with no path or principal, logs only fixed words, and keeps serving', async () => {
    dataRoot = freshDataRoot();
    client = await startAipcs(sqliteArgs(dataRoot, PRINCIPAL));
    const serviceId = await materialisedService(client);
    // The store replaced by garbage bytes, then the registry removed.
    const stores = join(dataRoot, 'service-stores');
    for (const name of readdirSync(stores)) rmSync(join(stores, name));
    writeFileSync(join(stores, `svc_${serviceId.replaceAll('-', '')}.sqlite`), Buffer.alloc(8192, 0x5a), { mode: 0o600 });
    const storeGone = await probe(client, serviceId);
    expect(storeGone.codes['aipcs_service_list']).toBe('ok');
    expect(storeGone.codes['aipcs_record_list']).toBe('storage_unavailable');
    for (const name of readdirSync(dataRoot)) if (name.startsWith('registry')) rmSync(join(dataRoot, name));
    const registryGone = await probe(client, serviceId);
    expect(Object.values(registryGone.codes)).toEqual(Array(6).fill('storage_unavailable'));
    expectNothingInternal(storeGone.text + registryGone.text + client.stderr(), [PRINCIPAL, dataRoot]);
    expectOnlyFaultLines(client.stderr(), 'a database file was removed or replaced while in use');
    expect((await client.call('aipcs_server_info')).ok).toBe(true);
  });
});

describe.each(postgresClusters())('aipcs serve on PostgreSQL $version whose schema is dropped while it runs', (cluster) => {
  it('answers storage_unavailable with no schema, DSN or password, logs only fixed words, keeps serving; doctor prints no DSN', async () => {
    const database = await createTestDatabase(cluster);
    // Trust authentication ignores the password; it is here to be looked for.
    const dsn = database.url.replace(/^postgresql:\/\/([^@]+)@/, `postgresql://$1:${PASSWORD}@`);
    const args = ['--profile', 'postgresql', '--principal-id', PRINCIPAL, '--postgres-dsn-env', 'AIPCS_WALK_DSN'];
    const client = await startAipcs(args, { AIPCS_WALK_DSN: dsn });
    try {
      const serviceId = await materialisedService(client);
      const schema = `svc_${serviceId.replaceAll('-', '')}`;
      const admin = cluster.adminUrl.replace(/\/postgres$/, `/${database.name}`);
      await queryRows(admin, `DROP SCHEMA "${schema}" CASCADE`);
      await queryRows(cluster.adminUrl, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database.name]);
      const dropped = await probe(client, serviceId);
      expect(dropped.codes['aipcs_service_list']).toBe('ok');
      expect(dropped.codes['aipcs_record_list']).toBe('storage_unavailable');
      expect(dropped.codes['aipcs_record_create']).toBe('storage_unavailable');
      expectNothingInternal(dropped.text + client.stderr(), [PRINCIPAL, PASSWORD, dsn, database.name, schema]);
      expectOnlyFaultLines(client.stderr(), 'a (table|schema) storage needs does not exist');
      expect((await client.call('aipcs_server_info')).ok).toBe(true);
      for (const command of [['doctor', '--service', serviceId], ['status'], ['config', 'show']]) {
        const run = aipcs([...command, ...args], { env: { AIPCS_WALK_DSN: dsn, AIPCS_LOG_LEVEL: 'debug' } });
        // An exit 1 (an uncaught error) was seen once under heavy load and not reproduced: say what it printed.
        expect(run.status, `${command.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
        expectNothingInternal(run.stdout + run.stderr, [PRINCIPAL, PASSWORD, dsn, database.name, schema]);
      }
    } finally {
      await client.close();
      await database.drop();
    }
  });
});

expectClustersUnderCi();
