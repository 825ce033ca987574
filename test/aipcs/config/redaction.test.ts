// Redaction (§2.9): no value, path or variable name given to configuration
// may appear in any output, success or failure, JSON or human.

import { describe, expect, it } from 'vitest';
import { configShowResult } from '../../../src/aipcs/config/reports.js';
import { requireRunnable, transportPreflight } from '../../../src/aipcs/config/resolve.js';
import { renderOutcome } from '../../../src/aipcs/cli/output.js';
import { CONFIG_FIELD_SPECS } from '../../../src/aipcs/config/fields.js';
import { run, V1, type Call } from './helpers.js';

const SECRETS = [
  'SECRET-PRINCIPAL-7f3a',
  '/secret/data/root-91c2',
  'SECRET_DSN_VAR_55',
  '10.77.66.55',
  '4321',
  '/secret-path-x',
  'secret-host.example',
  'https://secret-origin.example',
  '/nonexistent/aipcs-test/config.toml',
  '/home/secret-home-user',
  '/xdg/secret-xdg',
  'postgresql://user:pw@db/secret',
];

function outputs(call: Call): string[] {
  const resolution = run(call);
  const texts: string[] = [];
  for (const format of ['json', 'human'] as const) {
    for (const command of ['config', 'admin', 'serve'] as const) {
      const outcome = resolution.ok ? { ok: true as const, result: configShowResult(resolution.config) } : resolution;
      const rendered = renderOutcome(outcome, { format, command });
      texts.push(rendered.stdout, rendered.stderr);
      if (resolution.ok) {
        const runnable = requireRunnable(resolution.config);
        if (!runnable.ok) texts.push(renderOutcome(runnable, { format, command }).stderr);
      }
    }
  }
  return texts;
}

function expectClean(texts: readonly string[]): void {
  const joined = texts.join('\n');
  for (const secret of SECRETS) expect(joined).not.toContain(secret);
  expect(joined).not.toContain('AIPCS_');
  expect(joined).not.toContain('HOME');
  expect(joined).not.toContain('DSN_');
  for (const item of CONFIG_FIELD_SPECS) expect(joined).not.toContain(item.envVar);
}

describe('redaction (§2.9)', () => {
  it('a full configuration shows no value, path or name', () => {
    const texts = outputs({
      options: {
        profile: 'sqlite',
        principal_id: SECRETS[0] as string,
        sqlite_data_root: SECRETS[1] as string,
        http_host: SECRETS[3] as string,
        http_port: SECRETS[4] as string,
        http_path: SECRETS[5] as string,
        http_allowed_hosts: SECRETS[6] as string,
        http_allowed_origins: SECRETS[7] as string,
      },
      env: { HOME: SECRETS[9] as string, XDG_DATA_HOME: SECRETS[10] as string, SECRET_DSN_VAR_55: SECRETS[11] as string },
      toml: V1,
      sqliteVersion: '3.40.0',
    });
    expectClean(texts);
    expect(texts.join('')).toContain('"principal_configured":true');
  });

  it('a PostgreSQL configuration shows neither the reference name nor the DSN', () => {
    expectClean(
      outputs({
        options: { profile: 'postgresql', principal_id: SECRETS[0] as string, postgres_dsn_env: SECRETS[2] as string },
        env: { [SECRETS[2] as string]: SECRETS[11] as string },
      }),
    );
  });

  it.each<[string, Call]>([
    ['bad principal', { options: { principal_id: ` ${SECRETS[0]}` } }],
    ['bad data root', { options: { profile: 'sqlite', principal_id: 'a', sqlite_data_root: `relative${SECRETS[1]}` } }],
    ['bad DSN reference', { options: { profile: 'postgresql', principal_id: 'a', postgres_dsn_env: `${SECRETS[2]}-x` } }],
    ['bad host', { options: { http_host: `${SECRETS[3]}.1` } }],
    ['bad port', { env: { AIPCS_HTTP_PORT: `${SECRETS[4]}0000` } }],
    ['bad path', { options: { http_path: `${SECRETS[5]}?q` } }],
    ['bad Host entry', { options: { http_allowed_hosts: `${SECRETS[6]}:0` } }],
    ['bad Origin entry', { options: { http_allowed_origins: `${SECRETS[7]}/` } }],
    ['bad file', { toml: `${V1}[postgresql]\ndsn = "${SECRETS[11]}"\n` }],
    ['bad TOML syntax', { toml: `${V1}${SECRETS[11]}` }],
    ['bad home', { options: { profile: 'sqlite', principal_id: 'a' }, env: { HOME: `rel${SECRETS[9]}` } }],
    ['bad xdg', { options: { profile: 'sqlite', principal_id: 'a' }, env: { HOME: '/h', XDG_DATA_HOME: `rel${SECRETS[10]}` } }],
    ['bad transport', { env: { AIPCS_TRANSPORT: SECRETS[7] as string } }],
    ['bad runtime', { options: { profile: 'sqlite', principal_id: SECRETS[0] as string, sqlite_data_root: SECRETS[1] as string }, sqliteVersion: '3.0.0' }],
  ])('a failure (%s) shows none of its input', (_label, call) => {
    expectClean(outputs(call));
  });

  it('the preflight failure names no variable', () => {
    const outcome = transportPreflight({}, { FASTMCP_HOST: SECRETS[3] as string });
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expectClean([renderOutcome(outcome, { format: 'json', command: 'serve' }).stderr]);
    expect(JSON.stringify(outcome)).not.toContain('FASTMCP');
  });
});
