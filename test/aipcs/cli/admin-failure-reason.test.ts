// An administration command that storage refuses prints the one envelope
// line of operations spec §1.3 on stderr; `--log-level info` (or debug) adds
// the reason before it, in the fixed words `serve` uses for a refused
// start-up, without the path, the variable's name or driver text (§2.9).

import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, rootArgs, serveOn } from '../../support/aipcs-admin.js';

const ENVELOPE = '{"ok":false,"result":null,"error":{"code":"storage_unavailable","message":"Storage is unavailable.","issues":[],"retryable":false}}\n';

describe('why an administration command found storage unavailable', () => {
  it('names the location check that refused the data root, at --log-level info only', () => {
    const parent = mkdtempSync(join(tmpdir(), 'aipcs-admin-reason-'));
    try {
      chmodSync(parent, 0o777);
      const args = ['service', 'list', '--profile', 'sqlite', '--principal-id', 'p', '--sqlite-data-root', join(parent, 'data')];
      const quiet = aipcs(args);
      expect(quiet.status).toBe(6);
      expect(quiet.stderr).toBe(ENVELOPE);
      const told = aipcs([...args, '--log-level', 'info']);
      expect(told.status).toBe(6);
      expect(told.stderr).toBe(`aipcs info: aipcs service list: storage unavailable: the parent of the data root is writable by group or others\n${ENVELOPE}`);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('logs nothing for a refusal that is the answer, even at --log-level debug', async () => {
    const dataRoot = freshDataRoot();
    await (await serveOn(dataRoot)).close();
    const missing = aipcs(['storage', 'status', '--service', '11111111-2222-4333-8444-555555555555', ...rootArgs(dataRoot), '--log-level', 'debug']);
    expect(missing.status).toBe(3);
    expect(missing.envelope.error?.code).toBe('not_found');
    expect(missing.stderr.split('\n')).toHaveLength(2);
  });

  it('says the DSN variable is not set, without naming it', () => {
    const told = aipcs(['service', 'list', '--profile', 'postgresql', '--principal-id', 'p', '--postgres-dsn-env', 'AIPCS_TEST_NO_SUCH_DSN', '--log-level', 'debug']);
    expect(told.status).toBe(6);
    expect(told.stderr).toBe(`aipcs info: aipcs service list: storage unavailable: the DSN variable is not set\n${ENVELOPE}`);
  });

  it('says no PostgreSQL server listens, for read-only and operator commands alike', () => {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    const env = { AIPCS_TEST_UNREACHABLE_DSN: 'postgresql://u:secret@127.0.0.1:1/db' };
    const profile = ['--profile', 'postgresql', '--principal-id', 'p', '--postgres-dsn-env', 'AIPCS_TEST_UNREACHABLE_DSN'];
    const reason = 'storage unavailable: the connection was refused (no server listens at that address)';
    const list = aipcs(['service', 'list', ...profile, '--log-level', 'info'], { env });
    expect(list.status).toBe(6);
    expect(list.stderr).toBe(`aipcs info: aipcs service list: ${reason}\n${ENVELOPE}`);
    const id = '11111111-2222-4333-8444-555555555555';
    const suspend = aipcs(['service', 'suspend', id, '--expected-revision', '1', '--operation-id', id, ...profile, '--log-level', 'info'], { env });
    expect(suspend.status).toBe(6);
    expect(suspend.stderr).toBe(`aipcs info: aipcs service suspend: ${reason}\n${ENVELOPE}`);
    expect(aipcs(['service', 'list', ...profile], { env }).stderr).toBe(ENVELOPE);
  });

  it("says why the operator's own file failed, at --log-level info only", async () => {
    const dataRoot = freshDataRoot();
    await (await serveOn(dataRoot)).close();
    const id = '11111111-2222-4333-8444-555555555555';
    const missingFolder = join(dataRoot, 'no-such-folder', 'out.jsonl');
    const exportArgs = ['export', id, '--output', missingFolder, '--expected-revision', '4', '--operation-id', id, '--yes', ...rootArgs(dataRoot)];
    const quiet = aipcs(exportArgs);
    expect(quiet.status).toBe(6);
    expect(quiet.stderr.split('\n')).toHaveLength(2);
    const told = aipcs([...exportArgs, '--log-level', 'info']);
    expect(told.status).toBe(6);
    expect(told.stderr).toMatch(/^aipcs info: aipcs export: output unavailable: the file or its folder does not exist\n\{"ok":false,/);
    expect(told.envelope.error?.issues[0]?.code).toBe('output_unavailable');
    expect(told.stderr).not.toContain(dataRoot);
    const input = aipcs(['import', '--input', join(dataRoot, 'missing.jsonl'), '--dry-run', ...rootArgs(dataRoot), '--log-level', 'info']);
    expect(input.status).toBe(6);
    expect(input.stderr).toMatch(/^aipcs info: aipcs import: input unavailable: the file or its folder does not exist\n\{"ok":false,/);
  });

  it('says why for the reports that answer with an unavailable registry (status, doctor, storage status)', () => {
    const env = { AIPCS_TEST_UNREACHABLE_DSN: 'postgresql://u:secret@127.0.0.1:1/db' };
    const profile = ['--profile', 'postgresql', '--principal-id', 'p', '--postgres-dsn-env', 'AIPCS_TEST_UNREACHABLE_DSN'];
    const reason = 'storage unavailable: the connection was refused (no server listens at that address)';
    for (const command of [['status'], ['doctor'], ['storage', 'status']]) {
      const told = aipcs([...command, ...profile, '--log-level', 'info'], { env });
      expect(told.status).toBe(0);
      expect(told.stderr).toBe(`aipcs info: aipcs ${command.join(' ')}: ${reason}\n`);
      expect(JSON.stringify(told.envelope.result)).toContain('"issue_code":"storage_unavailable"');
      const quiet = aipcs([...command, ...profile], { env });
      expect(quiet.status).toBe(0);
      expect(quiet.stderr).toBe('');
    }
  });
});
