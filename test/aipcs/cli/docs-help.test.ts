// `aipcs … --help` against docs/configuration.md and the resolved
// configuration: every configuration option says what it takes, its
// variable and the default the configuration really applies, in the words
// of the field table (not just "configuration field x").

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcs } from '../../support/aipcs-admin.js';
import { repoRoot } from '../../support/bins.js';

interface FieldRow {
  readonly field: string;
  readonly option: string;
  readonly envVar: string;
  readonly defaultText: string;
  readonly allowed: string;
}

/** The rows of the field table in docs/configuration.md. */
function documentedFields(): FieldRow[] {
  const text = readFileSync(join(repoRoot, 'docs', 'configuration.md'), 'utf8');
  const rows: FieldRow[] = [];
  for (const line of text.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const [, field, option, envVar, , defaultText, allowed] = cells;
    if (!field?.startsWith('`') || !option?.startsWith('`--')) continue;
    rows.push({ field: field.slice(1, -1), option: option.slice(1, -1), envVar: envVar!.slice(1, -1), defaultText: defaultText!, allowed: allowed! });
  }
  return rows;
}

/** The help line of each `--option <value>` of a command, keyed by option. */
function helpLines(args: string[]): Map<string, string> {
  const run = aipcs([...args, '--help']);
  expect(run.status).toBe(0);
  const lines = new Map<string, string>();
  for (const match of run.stdout.matchAll(/^ {2}(--[a-z-]+) <value> +(.*)$/gm)) lines.set(match[1]!, match[2]!);
  return lines;
}

describe('configuration options in --help', () => {
  const rows = documentedFields();

  it('the field table of docs/configuration.md has the seventeen fields', () => {
    expect(rows).toHaveLength(17);
  });

  for (const command of [['serve'], ['config', 'show'], ['status'], ['service', 'purge']]) {
    it(`aipcs ${command.join(' ')} describes each option with its variable and documented default`, () => {
      const lines = helpLines(command);
      expect([...lines.keys()]).toEqual(rows.map((row) => row.option));
      for (const row of rows) {
        const line = lines.get(row.option)!;
        expect(line).not.toContain('configuration field');
        expect(line.endsWith(`; env ${row.envVar}`)).toBe(true);
        const literal = /^`([^`]+)`$/.exec(row.defaultText);
        if (literal) expect(line).toContain(`(default ${literal[1]})`);
        const range = /^(\d+)–(\d+)/.exec(row.allowed);
        if (range) expect(line).toContain(`${range[1]}-${range[2]}`);
      }
    });
  }

  it('the defaults it names are the ones config show resolves', () => {
    const lines = helpLines(['config', 'show']);
    const sqlite = aipcs(['config', 'show', '--profile', 'sqlite', '--principal-id', 'a']).envelope;
    const postgres = aipcs(['config', 'show', '--profile', 'postgresql', '--principal-id', 'a', '--postgres-dsn-env', 'X']).envelope;
    const stateless = aipcs(['config', 'show']).envelope;
    const result = (envelope: typeof sqlite): Record<string, Record<string, unknown>> => (envelope as { result: Record<string, Record<string, unknown>> }).result;
    const expected: [string, unknown][] = [
      ['--profile', result(stateless)['profile']],
      ['--transport', result(stateless)['transport']],
      ['--http-session-idle-timeout-seconds', result(stateless)['streamable_http']!['session_idle_timeout_seconds']],
      ['--sqlite-busy-timeout-ms', result(sqlite)['storage']!['sqlite_busy_timeout_ms']],
      ['--postgres-connect-timeout-seconds', result(postgres)['storage']!['postgresql_connect_timeout_seconds']],
      ['--postgres-lock-timeout-ms', result(postgres)['storage']!['postgresql_lock_timeout_ms']],
      ['--postgres-statement-timeout-ms', result(postgres)['storage']!['postgresql_statement_timeout_ms']],
      ['--log-level', result(stateless)['logging']!['level']],
      ['--http-allow-non-loopback', result(stateless)['streamable_http']!['non_loopback_explicitly_allowed']],
    ];
    for (const [option, value] of expected) expect(lines.get(option)).toContain(`(default ${String(value)})`);
  });

  it('the default Host allow-list adds localhost only for 127.0.0.1 and ::1, not for every loopback address', () => {
    expect(helpLines(['serve']).get('--http-allowed-hosts')).toContain('(default HOST:PORT, plus localhost:PORT for 127.0.0.1 or ::1)');
    // config show reports only whether the list was configured; the resolved lists are pinned in test/aipcs/config/precedence.test.ts.
  });

  it('the operator options say when they are required', () => {
    const suspend = aipcs(['service', 'suspend', '--help']).stdout;
    expect(suspend).toMatch(/^ {2}--expected-revision <REVISION> +.*\(required in machine mode\)$/m);
    expect(suspend).toMatch(/^ {2}--operation-id <OPERATION_ID> +.*lowercase UUID \(required in machine mode\)$/m);
    expect(suspend).toMatch(/^ {2}--yes +Do not prompt for confirmation\.$/m);
    // Archive, import and purge need --yes in machine mode (ops spec 1.9.1), and their help says so.
    for (const command of [['service', 'archive'], ['service', 'purge']]) {
      expect(aipcs([...command, '--help']).stdout).toMatch(/^ {2}--yes +Do not prompt for confirmation\. Required in machine mode\.$/m);
    }
    expect(aipcs(['import', '--help']).stdout).toMatch(/^ {2}--yes +Do not prompt for confirmation\. Required in machine mode; never with --dry-run\.$/m);
    const archive = aipcs(['service', 'archive', '00000000-0000-4000-8000-000000000001', '--expected-revision', '1', '--operation-id', '00000000-0000-4000-8000-000000000002']);
    expect(archive.status).toBe(2);
    expect(archive.stderr).toContain('"path":"--yes"');
  });

  it('options the parser requires say so (a missing one is usage text, exit 2)', () => {
    expect(aipcs(['export', '--help']).stdout).toMatch(/^ {2}--output <FILE> +.*\(required\)$/m);
    expect(aipcs(['import', '--help']).stdout).toMatch(/^ {2}--input <FILE> +.*\(required\)$/m);
    expect(aipcs(['maintenance', 'scan', '--help']).stdout).toMatch(/^ {2}--service <SERVICE_ID> +.*\(required\)$/m);
    const purge = aipcs(['service', 'purge', '--help']).stdout;
    expect(purge).toMatch(/^ {2}--receipt <RECEIPT> +.*\(this or --override is required\)$/m);
    expect(purge).toMatch(/^ {2}--override +.*\(this or --receipt is required\)$/m);
    expect(purge).toMatch(/^ {2}--confirm-service-id <SERVICE_ID> +.*\(required in machine mode\)$/m);
    for (const args of [['export', '00000000-0000-4000-8000-000000000001'], ['import'], ['maintenance', 'scan']]) {
      const run = aipcs(args);
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(/error: required option '--[a-z]+ <[A-Z_]+>' not specified/);
    }
  });
});
