// `aipcs serve --profile postgresql` reads the DSN from the named variable
// and fails closed, without ever printing it, when the variable is missing or
// the server cannot be reached, naming why at --log-level info; `config
// validate` never reads it.

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { createTestDatabase, postgresClusters, queryRows } from '../../support/postgres.js';

const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n';
const ARGS = ['--profile', 'postgresql', '--principal-id', 'agent', '--postgres-dsn-env', 'AIPCS_SECRET_DSN', '--postgres-connect-timeout-seconds', '2'];

function run(command: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [aipcsBin(), ...command], { input: INIT, encoding: 'utf8', timeout: 30_000, env: { PATH: process.env['PATH'] ?? '', ...env } });
}

describe('the postgresql profile', () => {
  it('validates its configuration without reading the DSN', () => {
    const result = run(['config', 'validate', ...ARGS], {});
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ ok: true, result: { config_version: 1, valid: true, profile: 'postgresql', runnable: true }, error: null });
  });

  it('fails closed when the DSN variable is missing', () => {
    const result = run(['serve', ...ARGS], {});
    expect(result.status).toBe(2);
    expect(JSON.parse(result.stderr.trim()).error.code).toBe('internal_error');
  });

  it('fails closed without leaking the DSN when the server cannot be reached', () => {
    const dsn = 'postgresql://secret-user:secret-password@127.0.0.1:1/secret-db';
    const result = run(['serve', ...ARGS, '--log-level', 'debug'], { AIPCS_SECRET_DSN: dsn });
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    for (const secret of ['secret-user', 'secret-password', 'secret-db', dsn]) expect(result.stderr).not.toContain(secret);
    expect(result.stderr).toContain('"code":"internal_error"');
  });
});

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('why serve refused to start, at --log-level info (PostgreSQL %s)', (_version, cluster) => {
  // The one envelope stays the contract's; the reason line names what to fix
  // (decision D11) without the DSN, a name in it, a SQLSTATE or driver text.
  function refusal(dsn: string | undefined): string {
    const result = run(['serve', ...ARGS, '--log-level', 'info'], dsn === undefined ? {} : { AIPCS_SECRET_DSN: dsn });
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr.trim().split('\n').at(-1)!).error.code).toBe('internal_error');
    const reason = /start-up refused: (.*)/.exec(result.stderr)?.[1] ?? '';
    if (dsn !== undefined) {
      const url = new URL(dsn);
      for (const part of [dsn, url.username, url.pathname.slice(1), url.port, url.hostname]) expect(result.stderr).not.toContain(part);
    }
    expect(reason).not.toMatch(/[0-9A-Z]{5}|SQLSTATE/);
    return reason;
  }

  it('names an unset DSN variable, a refused connection, a missing database or role, a full connection limit and a foreign registry', async () => {
    expect(refusal(undefined)).toBe('storage unavailable: the DSN variable is not set');
    expect(refusal('postgresql://secret_user:secret_password@127.0.0.1:1/secret_db')).toBe('storage unavailable: the connection was refused (no server listens at that address)');
    const db = await createTestDatabase(cluster);
    try {
      const wrongDatabase = new URL(db.url);
      wrongDatabase.pathname = '/no_such_database_here';
      expect(refusal(wrongDatabase.toString())).toBe('storage unavailable: the database does not exist');
      const wrongRole = new URL(db.url);
      wrongRole.username = 'no_such_role_here';
      expect(refusal(wrongRole.toString())).toMatch(/^storage unavailable: the server refused the login/);
      const role = new URL(db.url).username;
      await queryRows(cluster.adminUrl, `ALTER ROLE ${role} CONNECTION LIMIT 0`);
      expect(refusal(db.url)).toBe('storage unavailable: no connection slot is free (the server or the role has reached its connection limit)');
      await queryRows(cluster.adminUrl, `ALTER ROLE ${role} CONNECTION LIMIT -1`);
      await queryRows(db.url, 'CREATE SCHEMA aipcs_registry');
      expect(refusal(db.url)).toBe('storage unavailable: the registry schema is incompatible: serve neither adopts nor repairs it (aipcs status shows it)');
    } finally {
      await db.drop();
    }
  }, 60_000);
});
