// The usage the Python reference's README, docs and examples give,
// run against the built `aipcs` as a migrating user would. Every example
// there worked the same (tool arguments, flags, variables, admin commands),
// except what docs/configuration.md "Coming from the Python reference" lists;
// these tests keep that section true.

import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcs } from '../../support/aipcs-admin.js';

const scratch = (): string => mkdtempSync(join(tmpdir(), 'aipcs-refdocs-'));

describe('the reference documentation, replayed', () => {
  it("the reference guide's sample TOML (stateless with a [sqlite] table) is refused at path storage", () => {
    const file = join(scratch(), 'aipcs.toml');
    writeFileSync(
      file,
      'config_version = 1\nprofile = "stateless"\ntransport = "stdio"\n\n[identity]\nprincipal_id = "local_operator"\n\n' +
        '[sqlite]\nbusy_timeout_ms = 5000\n\n[logging]\nlevel = "warning"\n',
    );
    for (const command of [['config', 'show'], ['config', 'validate']]) {
      const run = aipcs([...command, '--config', file]);
      expect(run.status).toBe(2);
      expect(run.envelope.error?.code).toBe('validation_failed');
      expect(run.envelope.error?.issues.map((issue) => issue.path)).toEqual(['storage']);
    }
  });

  it('the default SQLite root is the folder aipcs, not aipcs-mcp', () => {
    const home = scratch();
    const run = aipcs(['serve', '--profile', 'sqlite', '--principal-id', 'my-agent'], { env: { HOME: home } });
    expect(run.status).toBe(0);
    expect(existsSync(join(home, '.local', 'share', 'aipcs', 'registry.sqlite'))).toBe(true);
    expect(existsSync(join(home, '.local', 'share', 'aipcs-mcp'))).toBe(false);
  });

  it('the pre-v1 prototype variables AIPCS_OWNER_ID and AIPCS_DATA_DIR select nothing: stateless', () => {
    const run = aipcs(['config', 'show'], { env: { AIPCS_OWNER_ID: 'mark', AIPCS_DATA_DIR: join(scratch(), 'data') } });
    expect(run.status).toBe(0);
    expect(run.envelope.result?.['profile']).toBe('stateless');
    expect(run.envelope.result?.['identity']).toEqual({ principal_configured: false });
  });
});
