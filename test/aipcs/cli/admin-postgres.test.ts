// The administration commands on the postgresql profile, once per started
// cluster: inspection before and after `serve` migrated the registry, the
// operator lifecycle, a move from PostgreSQL to SQLite and back, purge, and
// a missing DSN variable as storage_unavailable (never printing the DSN).

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import { startAipcs } from '../../support/aipcs-client.js';
import { createTestDatabase, postgresClusters, expectClustersUnderCi } from '../../support/postgres.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const DSN_ENV = 'AIPCS_TEST_ADMIN_DSN';
const pgArgs = (principal = 'local-agent') => ['--profile', 'postgresql', '--principal-id', principal, '--postgres-dsn-env', DSN_ENV, '--postgres-connect-timeout-seconds', '5'];

const clusters = postgresClusters();
expectClustersUnderCi();

for (const cluster of clusters) {
  describe(`aipcs admin on PostgreSQL ${cluster.version}`, () => {
    it('inspects, operates, moves a service to SQLite and back, and purges', async () => {
      const database = await createTestDatabase(cluster);
      const env = { [DSN_ENV]: database.url };
      const pg = (argv: string[]) => aipcs([...argv, ...pgArgs()], { env });
      try {
        const before = pg(['status']);
        expect(before.status).toBe(0);
        expect(before.envelope.result).toMatchObject({ profile: 'postgresql', backend: 'postgresql', registry: { component: 'registry', backend: 'postgresql', status: 'uninitialised' } });
        expect(JSON.stringify(before)).not.toContain(database.url);

        const server = await startAipcs(pgArgs(), env);
        let serviceId: string;
        try {
          serviceId = await materialisedService(server, 'pg_notes');
          await createNote(server, serviceId, { title: 'On PostgreSQL', tags: ['pg'] });
        } finally {
          await server.close();
        }
        // Revisions on the public scale of spec §1.8: PostgreSQL registry 2, store 1.
        expect(pg(['status']).envelope.result).toMatchObject({ registry: { status: 'ready', applied_revision: 2, target_revision: 2, issue_code: null }, services: { design: { materialised: 1 } }, overall: 'ready' });
        const doctor = pg(['doctor', '--service', serviceId]);
        expect(doctor.envelope.result).toMatchObject({ overall: 'pass', checks: expect.arrayContaining([{ check_id: 'credential_reference', status: 'pass', issue_code: null }]) });
        expect(pg(['storage', 'status', '--service', serviceId]).envelope.result).toMatchObject({ component: 'service_store', backend: 'postgresql', status: 'ready', applied_revision: 1, target_revision: 1 });
        expect(pg(['maintenance', 'scan', '--service', serviceId]).status).toBe(0);

        expect(pg(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1)]).status).toBe(0);
        const work = mkdtempSync(join(tmpdir(), 'aipcs-pg-admin-'));
        const fromPg = join(work, 'from-pg.jsonl');
        const exported = pg(['export', serviceId, '--output', fromPg, '--expected-revision', '4', '--operation-id', OP(2)]);
        expect(exported.status, exported.stderr).toBe(0);
        expect(exported.envelope.result).toMatchObject({ summary: { source_backend: 'postgresql' }, receipt: { backend: 'postgresql' } });

        // Into SQLite, used there, and back into a second PostgreSQL database.
        const sqliteRoot = freshDataRoot();
        await (await serveOn(sqliteRoot)).close();
        const imported = aipcs(['import', '--input', fromPg, '--operation-id', OP(3), '--yes', ...rootArgs(sqliteRoot)]);
        expect(imported.status, imported.stderr).toBe(0);
        expect(imported.envelope.result).toMatchObject({ service: { service_id: serviceId, storage: { backend: 'sqlite' } } });
        expect(aipcs(['service', 'resume', serviceId, '--expected-revision', '4', '--operation-id', OP(4), ...rootArgs(sqliteRoot)]).status).toBe(0);
        const onSqlite = await serveOn(sqliteRoot);
        try {
          const listed = await onSqlite.call('aipcs_record_search', { service_id: serviceId, entity_name: 'note', filters: { tags: 'pg' } });
          expect((listed.result?.['records'] as unknown[]).length).toBe(1);
        } finally {
          await onSqlite.close();
        }
        expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '5', '--operation-id', OP(5), ...rootArgs(sqliteRoot)]).status).toBe(0);
        const fromSqlite = join(work, 'from-sqlite.jsonl');
        expect(aipcs(['export', serviceId, '--output', fromSqlite, '--expected-revision', '6', '--operation-id', OP(6), ...rootArgs(sqliteRoot)]).status).toBe(0);
        const second = await createTestDatabase(cluster);
        try {
          await (await startAipcs(pgArgs(), { [DSN_ENV]: second.url })).close();
          const back = aipcs(['import', '--input', fromSqlite, '--operation-id', OP(7), '--yes', ...pgArgs()], { env: { [DSN_ENV]: second.url } });
          expect(back.status, back.stderr).toBe(0);
          expect(back.envelope.result).toMatchObject({ service: { service_id: serviceId, service_revision: 6, storage: { backend: 'postgresql' } } });
          // Resumed there, the imported service takes writes again.
          expect(aipcs(['service', 'resume', serviceId, '--expected-revision', '6', '--operation-id', OP(11), ...pgArgs()], { env: { [DSN_ENV]: second.url } }).status).toBe(0);
          const onSecond = await startAipcs(pgArgs(), { [DSN_ENV]: second.url });
          try {
            const created = await onSecond.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'Back on PostgreSQL' }, idempotency_key: 'back-1' });
            expect([created.ok, created.result?.['record']]).toMatchObject([true, { record_version: 1 }]);
          } finally {
            await onSecond.close();
          }
        } finally {
          await second.drop();
        }

        // Purge the original on PostgreSQL: archive, export after the archive, purge by receipt.
        expect(pg(['service', 'archive', serviceId, '--expected-revision', '4', '--operation-id', OP(8), '--yes']).status).toBe(0);
        const final = pg(['export', serviceId, '--output', join(work, 'final.jsonl'), '--expected-revision', '5', '--operation-id', OP(9)]);
        const receiptId = (final.envelope.result?.['receipt'] as Record<string, string>)['receipt_id'] as string;
        const purged = pg(['service', 'purge', serviceId, '--expected-revision', '5', '--operation-id', OP(10), '--receipt', receiptId, '--confirm-service-id', serviceId, '--yes']);
        expect(purged.status, purged.stderr).toBe(0);
        expect(pg(['service', 'inspect', serviceId]).envelope.error?.code).toBe('not_found');
      } finally {
        await database.drop();
      }
    });

    it('a missing, blank or overlong DSN is storage_unavailable (6) for the admin commands', () => {
      for (const argv of [['status'], ['service', 'list'], ['service', 'suspend', OP(1), '--expected-revision', '1', '--operation-id', OP(2)]]) {
        const run = aipcs([...argv, ...pgArgs()]);
        expect([run.status, run.envelope.error?.code]).toEqual([6, 'storage_unavailable']);
      }
      for (const dsn of ['  ', `postgresql://u@127.0.0.1:1/${'d'.repeat(4096)}`]) {
        const run = aipcs(['status', ...pgArgs()], { env: { [DSN_ENV]: dsn } });
        expect([run.status, run.envelope.error?.code]).toEqual([6, 'storage_unavailable']);
      }
      const unreachable = aipcs(['status', ...pgArgs()], { env: { [DSN_ENV]: 'postgresql://secret-user:secret-pass@127.0.0.1:1/secret-db' } });
      expect(unreachable.status).toBe(0);
      expect(unreachable.envelope.result).toMatchObject({ registry: { status: 'unavailable' }, overall: 'unavailable' });
      expect(unreachable.stdout + unreachable.stderr).not.toContain('secret');
    });

    // node-postgres warns on stderr when it parses these modes; driver text
    // stays out of every output (operations spec §2.9), and a command that
    // succeeded prints nothing there.
    it.each(['prefer', 'require', 'verify-ca'])('prints no driver warning for a DSN with sslmode=%s', async (mode) => {
      const database = await createTestDatabase(cluster);
      try {
        const run = aipcs(['status', ...pgArgs()], { env: { [DSN_ENV]: `${database.url}?sslmode=${mode}` } });
        expect(run.status).toBe(0);
        expect(run.envelope.result).toMatchObject({ profile: 'postgresql' });
        expect(run.stderr).toBe('');
      } finally {
        await database.drop();
      }
    });
  });
}
