// `aipcs serve --profile postgresql` reads the DSN from the named variable
// and fails closed, without ever printing it, when the variable is missing or
// the server cannot be reached; `config validate` never reads it.

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';

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
