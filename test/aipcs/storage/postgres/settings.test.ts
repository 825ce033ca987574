// PostgreSQL adapter against settings an operator's database, role or DSN may
// carry (ALTER DATABASE … SET, ALTER ROLE … SET, options=-c …): the ones that
// would change what clients observe are pinned on every connection, so the
// adapter behaves as on a database with none of them.

import { describe, expect, it } from 'vitest';
import pg from 'pg';
import type { JsonObject } from '../../../../src/common/json.js';
import { PostgresConnection } from '../../../../src/aipcs/storage/postgres/connection.js';
import { appOver, materialisedNotes } from '../../../conformance/harness.js';
import type { ClusterInfo } from '../../../support/postgres-cluster.js';
import { expectClustersUnderCi, postgresClusters, queryRows, timeouts, usePostgresStorage, whileStoreLocked } from '../../../support/postgres.js';

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s under operator settings', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);
  const { open } = fixture;
  const role = () => new URL(fixture.db.url).username;
  const serverVersionNum = async () => Number((await queryRows<{ v: string }>(cluster.adminUrl, `SELECT current_setting('server_version_num') AS v`))[0]?.v);

  it('pins the session settings whatever the database, the role or the DSN asks for', async () => {
    const hostile: Record<string, string> = { quote_all_identifiers: 'on', idle_session_timeout: '1500ms', array_nulls: 'off', lock_timeout: '1500ms', statement_timeout: '1500ms' };
    if ((await serverVersionNum()) >= 170000) hostile['transaction_timeout'] = '1500ms';
    for (const [name, value] of Object.entries(hostile)) {
      await queryRows(fixture.adminUrl, `ALTER DATABASE ${fixture.db.name} SET ${name} = '${value}'`);
      await queryRows(fixture.adminUrl, `ALTER ROLE ${role()} SET ${name} = '${value}'`);
    }
    const url = new URL(fixture.db.url);
    url.searchParams.set('options', Object.entries(hostile).map(([name, value]) => `-c ${name}=${value}`).join(' '));
    const read = `SELECT current_setting('quote_all_identifiers') AS quote_all_identifiers, current_setting('idle_session_timeout') AS idle_session_timeout,
                         current_setting('array_nulls') AS array_nulls,
                         current_setting('transaction_timeout', true) AS transaction_timeout,
                         (SELECT setting FROM pg_settings WHERE name = 'lock_timeout') AS lock_timeout_ms,
                         (SELECT setting FROM pg_settings WHERE name = 'statement_timeout') AS statement_timeout_ms`;
    for (const dsn of [fixture.db.url, url.toString()]) {
      // A plain client on the same DSN gets the operator's values, so the check below means something.
      expect((await queryRows(dsn, read))[0]).toMatchObject({ quote_all_identifiers: 'on', idle_session_timeout: '1500ms', array_nulls: 'off' });
      const connection = new PostgresConnection({ dsn, ...timeouts });
      try {
        for (const mode of ['read', 'write'] as const) {
          expect(await connection.transaction(mode, (session) => session.first(read))).toEqual({
            quote_all_identifiers: 'off',
            idle_session_timeout: '0',
            // Import staging's batches are arrays holding NULLs.
            array_nulls: 'on',
            transaction_timeout: 'transaction_timeout' in hostile ? '0' : null,
            // The configured timeouts, in milliseconds, whoever asked for others.
            lock_timeout_ms: String(timeouts.lockTimeoutMs),
            statement_timeout_ms: String(timeouts.statementTimeoutMs),
          });
        }
      } finally {
        await connection.close();
      }
    }
  });

  it('has the server probe a silent client after a minute, so a vanished host does not hold a lock for hours', async () => {
    const connection = new PostgresConnection({ dsn: fixture.db.url, ...timeouts });
    try {
      const probes = `SELECT current_setting('tcp_keepalives_idle') AS idle, current_setting('tcp_keepalives_interval') AS every, current_setting('tcp_keepalives_count') AS count`;
      // The test cluster is reached over TCP loopback, where the settings apply (a Unix socket shows 0).
      expect(await connection.transaction('read', (session) => session.first(probes))).toEqual({ idle: '60', every: '10', count: '6' });
    } finally {
      await connection.close();
    }
  });

  it('does not wait for a safe snapshot when the role defaults to serializable, read-only, deferrable transactions', async () => {
    for (const setting of [`default_transaction_isolation = 'serializable'`, 'default_transaction_read_only = on', 'default_transaction_deferrable = on']) {
      await queryRows(fixture.adminUrl, `ALTER ROLE ${role()} SET ${setting}`);
    }
    // Another application on the server, in the middle of a serializable
    // transaction that has written: a deferrable read-only transaction that
    // starts now waits until it ends.
    const other = new pg.Client({ connectionString: fixture.adminUrl });
    await other.connect();
    try {
      await other.query('CREATE TABLE other_app (x int)');
      await other.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
      await other.query('INSERT INTO other_app VALUES (1)');
      await other.query('SELECT count(*) FROM other_app');
      const storage = await open({ lockTimeoutMs: 1000, statementTimeoutMs: 1000 });
      const { serviceId, app } = await materialisedNotes(storage);
      expect((await app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'r' }))['replayed']).toBe(false);
      await other.query('ROLLBACK');
    } finally {
      await other.end();
    }
  });

  it('keeps the layout signatures valid when quote_all_identifiers changes between connections', async () => {
    // Expected layouts are rendered once per process (catalog.ts) and shared
    // by every connection: a database setting that a DBA changes while AIPCS
    // runs reaches only the connections opened afterwards.
    const first = await open();
    const { serviceId, app } = await materialisedNotes(first);
    await app.records.create({ serviceId, entityName: 'note', record: { title: 'before' }, idempotencyKey: 'r1' });
    await queryRows(fixture.adminUrl, `ALTER DATABASE ${fixture.db.name} SET quote_all_identifiers = on`);
    const second = await open();
    const later = appOver(second);
    const created = await later.records.create({ serviceId, entityName: 'note', record: { title: 'after' }, idempotencyKey: 'r2' });
    expect(created['replayed']).toBe(false);
    expect(await second.stores.inspect({ backend: 'postgresql', namespace: (await materialisedNotes(second, 'other')).namespace })).toMatchObject({ status: 'ready' });
  });

  it('reports a lock wait as busy even when transaction_timeout is shorter than lock_timeout', async () => {
    if ((await serverVersionNum()) < 170000) return; // transaction_timeout exists from PostgreSQL 17
    await queryRows(fixture.adminUrl, `ALTER DATABASE ${fixture.db.name} SET transaction_timeout = '200ms'`);
    const storage = await open({ lockTimeoutMs: 1000 });
    const { serviceId, namespace, app } = await materialisedNotes(storage);
    await whileStoreLocked(fixture.db.url, namespace, async () => {
      await expect(app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'blocked' })).rejects.toMatchObject({ code: 'storage_busy' });
    }, { options: '-c transaction_timeout=0' });
  });

  it('answers as on a plain database under output-format, planner and error settings the database may carry', async () => {
    // docs/postgresql.md: settings that change nothing clients see. exit_on_error
    // would end the session at the first error (a unique violation, a lock wait).
    const settings: Record<string, string> = {
      DateStyle: 'SQL, DMY', IntervalStyle: 'sql_standard', bytea_output: 'escape', transform_null_equals: 'on', enable_indexscan: 'off', enable_bitmapscan: 'off',
      plan_cache_mode: 'force_generic_plan', jit: 'on', client_min_messages: 'debug5', exit_on_error: 'on', max_parallel_workers_per_gather: '0',
    };
    for (const [name, value] of Object.entries(settings)) await queryRows(fixture.adminUrl, `ALTER DATABASE ${fixture.db.name} SET ${name} = '${value}'`);
    expect((await queryRows(fixture.db.url, `SELECT current_setting('exit_on_error') AS v, current_setting('DateStyle') AS d`))[0]).toEqual({ v: 'on', d: 'SQL, DMY' });
    const storage = await open({ lockTimeoutMs: 500 });
    const { serviceId, namespace, app } = await materialisedNotes(storage);
    const project = await app.records.create({ serviceId, entityName: 'project', record: { name: 'P', code: 'A' }, idempotencyKey: 'p1' });
    expect(project['replayed']).toBe(false);
    await expect(app.records.create({ serviceId, entityName: 'project', record: { name: 'Q', code: 'A' }, idempotencyKey: 'p2' })).rejects.toMatchObject({ code: 'constraint_violation' });
    await whileStoreLocked(fixture.db.url, namespace, async () => {
      await expect(app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'blocked' })).rejects.toMatchObject({ code: 'storage_busy' });
    });
    const note = await app.records.create({ serviceId, entityName: 'note', record: { title: 'after', due_at: '2026-12-05T10:00:00Z', tags: ['a'] }, idempotencyKey: 'n1' });
    const found = await app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null, filters: { tags: 'a' } });
    expect((found['records'] as JsonObject[]).map((record) => record['id'])).toEqual([(note['record'] as JsonObject)['id']]);
    // DateStyle and IntervalStyle change no time the store reads back.
    expect(((found['records'] as JsonObject[])[0]?.['fields'] as JsonObject)['due_at']).toBe('2026-12-05T10:00:00Z');
    expect((found['records'] as JsonObject[])[0]?.['created_at']).toBe((note['record'] as JsonObject)['created_at']);
  });

  it('is not steered by functions that a DSN search_path puts before pg_catalog', async () => {
    await queryRows(fixture.db.url, `CREATE SCHEMA shadow`);
    await queryRows(fixture.db.url, `CREATE FUNCTION shadow.current_setting(text) RETURNS text LANGUAGE sql AS $$ SELECT '150000'::text $$`);
    const url = new URL(fixture.db.url);
    url.searchParams.set('options', '-c search_path=shadow,pg_catalog');
    const storage = await open({ dsn: url.toString() });
    const { serviceId, app } = await materialisedNotes(storage);
    expect((await app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'r' }))['replayed']).toBe(false);
  });
});
