// The PostgreSQL driver is imported only when a postgresql profile connects
// (operations spec §1.7, §2.10): configuration commands and the SQLite
// profile never load it, and a missing driver shows as an unavailable
// registry, not as a crash. A module hook refuses to resolve `pg`, as if the
// package were not installed.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, rootArgs } from '../../support/aipcs-admin.js';

let withoutDriver: Record<string, string>;

beforeAll(() => {
  const folder = mkdtempSync(join(tmpdir(), 'aipcs-no-pg-'));
  const hooks = join(folder, 'hooks.mjs');
  writeFileSync(
    hooks,
    `export async function resolve(specifier, context, next) {
  if (specifier === 'pg' || specifier.startsWith('pg/')) throw Object.assign(new Error('pg is not installed'), { code: 'ERR_MODULE_NOT_FOUND' });
  return next(specifier, context);
}\n`,
  );
  const register = join(folder, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  withoutDriver = { NODE_OPTIONS: `--import=${pathToFileURL(register).href}` };
});

describe('the PostgreSQL driver', () => {
  it('is not needed by config commands or the SQLite profile', () => {
    const show = aipcs(['config', 'show', '--profile', 'postgresql', '--principal-id', 'p', '--postgres-dsn-env', 'AIPCS_TEST_DSN'], { env: withoutDriver });
    expect(show.status, show.stderr).toBe(0);
    const validate = aipcs(['config', 'validate', '--profile', 'sqlite', '--principal-id', 'p'], { env: withoutDriver });
    expect(validate.status, validate.stderr).toBe(0);
    const status = aipcs(['status', ...rootArgs(freshDataRoot())], { env: withoutDriver });
    expect(status.status, status.stderr).toBe(0);
  });

  it('when missing, shows as an unavailable registry on the postgresql profile', () => {
    const status = aipcs(['status', '--profile', 'postgresql', '--principal-id', 'p', '--postgres-dsn-env', 'AIPCS_TEST_DSN'], {
      env: { ...withoutDriver, AIPCS_TEST_DSN: 'postgresql://127.0.0.1:1/none' },
    });
    expect(status.stderr).not.toContain('ERR_MODULE_NOT_FOUND');
    expect(status.envelope.result?.['registry']).toMatchObject({ status: 'unavailable', applied_revision: null });
  });
});

// Loading better-sqlite3's native library is what `sqlite_version()` costs;
// §1.7/§2.10 and decision 4 say configuration loads no driver unless the
// profile is sqlite. A preload logs every native library Node opens.
describe('the SQLite library', () => {
  let logDlopen: Record<string, string>;

  beforeAll(() => {
    const folder = mkdtempSync(join(tmpdir(), 'aipcs-dlopen-'));
    const preload = join(folder, 'log-dlopen.cjs');
    writeFileSync(
      preload,
      `const open = process.dlopen;
process.dlopen = function (module, file, ...rest) {
  process.stderr.write('native library opened: ' + require('node:path').basename(file) + '\\n');
  return open.call(this, module, file, ...rest);
};\n`,
    );
    logDlopen = { NODE_OPTIONS: `--require=${preload}` };
  });

  const opened = (stderr: string): boolean => stderr.includes('native library opened: better_sqlite3.node');

  it('is not loaded by config show, config validate or status unless the profile is sqlite', () => {
    const runs = [
      aipcs(['config', 'show'], { env: logDlopen }),
      aipcs(['config', 'validate', '--profile', 'postgresql', '--principal-id', 'p', '--postgres-dsn-env', 'AIPCS_TEST_DSN'], { env: logDlopen }),
      aipcs(['config', 'show', '--profile', 'postgresql', '--principal-id', 'p', '--postgres-dsn-env', 'AIPCS_TEST_DSN'], { env: logDlopen }),
      aipcs(['status'], { env: logDlopen }),
    ];
    for (const run of runs) {
      expect(run.status, run.stderr).toBe(0);
      expect(opened(run.stderr), run.stderr).toBe(false);
    }
  });

  it('is loaded to read its version for the sqlite profile', () => {
    const show = aipcs(['config', 'show', '--profile', 'sqlite', '--principal-id', 'p'], { env: logDlopen });
    expect(show.status, show.stderr).toBe(0);
    expect(opened(show.stderr)).toBe(true);
    expect(show.envelope.result?.['storage']).toMatchObject({ sqlite_runtime: { supported: true } });
  });
});
