// The reference's CLI and configuration test scenarios replayed
// against the built `aipcs`, as a user runs it. Only what differed is here;
// everything else already had a test.
//
// --output / --input name a file the way the reference's pathlib reads the
// text: empty and `.` components are dropped (`out.jsonl/` is `out.jsonl`),
// the last remaining component must exist and not be `..`, and the 4096
// limit counts code points.

import { mkdirSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

describe('artefact paths are read like the reference reads them', () => {
  let dataRoot: string;
  let work: string;
  let client: AipcsClient;
  let args: string[];
  let serviceId: string;
  let artefact: string;

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    work = dirname(dataRoot);
    client = await serveOn(dataRoot);
    args = rootArgs(dataRoot);
    serviceId = await seedService(client, 'paths');
    // A seeded service may be exported in any status (revision 1, active).
    artefact = join(work, 'first.jsonl');
    const first = aipcs(['export', serviceId, '--output', artefact, '--expected-revision', '1', '--operation-id', OP(1), ...args]);
    expect(first.status).toBe(0);
  });

  afterAll(async () => {
    await client.close();
  });

  it('an --output with a trailing slash or /. names the file before it', () => {
    const slash = aipcs(['export', serviceId, '--output', `${join(work, 'slash.jsonl')}/`, '--expected-revision', '1', '--operation-id', OP(2), ...args]);
    expect(slash.status).toBe(0);
    expect(slash.envelope.result).toMatchObject({ operation: 'export', operation_id: OP(2) });
    const published = statSync(join(work, 'slash.jsonl'));
    expect(published.isFile()).toBe(true);
    expect(published.mode & 0o777).toBe(0o600);

    const dot = aipcs(['export', serviceId, '--output', `${join(work, 'dot.jsonl')}/./`, '--expected-revision', '1', '--operation-id', OP(3), ...args]);
    expect(dot.status).toBe(0);
    expect(statSync(join(work, 'dot.jsonl')).isFile()).toBe(true);
  });

  it('an existing folder given with a trailing slash is already_exists, not a lexical error, and leaves nothing', () => {
    const folder = join(work, 'existing-folder');
    mkdirSync(folder, { mode: 0o700 });
    const run = aipcs(['export', serviceId, '--output', `${folder}/`, '--expected-revision', '1', '--operation-id', OP(4), ...args]);
    expect(run.status).toBe(3);
    expect(run.envelope.error?.code).toBe('already_exists');
    expect(readdirSync(folder)).toEqual([]);
    expect(readdirSync(work).filter((name) => name.startsWith('.aipcs-export-'))).toEqual([]);
  });

  it('an --input with a trailing slash or /. reads the file before it', () => {
    for (const input of [`${artefact}/`, `${artefact}/.`, `${artefact}//./`]) {
      const run = aipcs(['import', '--input', input, '--dry-run', ...args]);
      expect(run.status, input).toBe(0);
      expect(run.envelope.result).toMatchObject({ operation: 'import_dry_run', service: { service_id: serviceId } });
    }
  });

  it('a trailing slash does not make a symlink followed', () => {
    const link = join(work, 'link.jsonl');
    symlinkSync(artefact, link);
    const run = aipcs(['import', '--input', `${link}/`, '--dry-run', ...args]);
    expect(run.status).toBe(2);
    expect(run.envelope.error?.code).toBe('validation_failed');
    expect(run.stderr).not.toContain('link.jsonl');
  });

  it('paths naming no file are still lexical errors', () => {
    for (const input of ['/', '.', './', `${work}/..`, `${work}/../`, '']) {
      const run = aipcs(['import', '--input', input, '--dry-run', ...args]);
      expect(run.status, input).toBe(2);
      expect(run.envelope.error?.issues[0]?.path, input).toBe('--input');
      expect(run.envelope.error?.issues[0]?.code, input).toBe('invalid_argument');
    }
    // An --output ending in .. is refused by the same lexical rule, not found to exist (already_exists).
    for (const output of [`${work}/..`, `${work}/../`]) {
      const run = aipcs(['export', serviceId, '--output', output, '--expected-revision', '1', '--operation-id', OP(90), ...args]);
      expect([run.status, run.envelope.error?.code, run.envelope.error?.issues[0]?.code, run.envelope.error?.issues[0]?.path], output).toEqual([2, 'validation_failed', 'invalid_argument', '--output']);
    }
  });

  it('the 4096 limit counts characters, not UTF-16 units', () => {
    // 4097 characters: refused by the lexical rule.
    const long = aipcs(['import', '--input', `/${'x'.repeat(4096)}`, '--dry-run', ...args]);
    expect(long.status).toBe(2);
    expect(long.envelope.error?.issues[0]?.path).toBe('--input');
    // 4096 characters pass the rule; no system opens a name that long, so the
    // refusal is the unreadable-input one, not the lexical one.
    const atLimit = aipcs(['import', '--input', `/${'x'.repeat(4095)}`, '--dry-run', ...args]);
    expect([atLimit.status, atLimit.envelope.error?.code]).toEqual([6, 'storage_unavailable']);
    // 2100 astral characters (4200 UTF-16 units) pass the rule; the system
    // then cannot open such a name, which is storage_unavailable like any
    // other unreadable input.
    const astral = aipcs(['import', '--input', join(work, '\u{1F600}'.repeat(2100)), '--dry-run', ...args]);
    expect(astral.status).toBe(6);
    expect(astral.envelope.error?.code).toBe('storage_unavailable');
  });

  it('a file given with a trailing slash is imported for real too', async () => {
    const destination = freshDataRoot();
    await (await serveOn(destination)).close();
    const run = aipcs(['import', '--input', `${artefact}/`, '--operation-id', OP(5), '--yes', ...rootArgs(destination)]);
    expect(run.status).toBe(0);
    expect(run.envelope.result).toMatchObject({ operation: 'import', service: { service_id: serviceId } });
  });
});

describe('a flag given a value', () => {
  it('is a parser error saying the value is ignored, never a suggestion of the flag itself, never the value', () => {
    const dryRun = aipcs(['import', '--input', 'x.jsonl', '--dry-run=1']);
    expect(dryRun.status).toBe(2);
    expect(dryRun.stdout).toBe('');
    expect(dryRun.stderr).toBe('usage: aipcs import [options]\naipcs import: error: argument --dry-run: ignored explicit argument\n');
    const yes = aipcs(['service', 'archive', OP(9), '--expected-revision', '1', '--operation-id', OP(9), '--yes=hidden-value']);
    expect(yes.status).toBe(2);
    expect(yes.stderr).toContain('aipcs service archive: error: argument --yes: ignored explicit argument');
    expect(yes.stderr).not.toContain('hidden-value');
    // An option this command does not have is still unknown.
    const other = aipcs(['status', '--yes=1']);
    expect(other.status).toBe(2);
    expect(other.stderr).toContain("aipcs status: error: unknown option '--yes'");
  });
});

describe('an option value that starts with a dash', () => {
  it('is read as argparse reads it: a missing value unless it is a negative number, "-", holds a space or is given with =', () => {
    for (const argv of [
      ['config', 'show', '--profile', 'sqlite', '--principal-id', '-agent'],
      ['config', 'show', '--principal-id', '--profile', 'sqlite'],
      ['status', '--format', '-x'],
      ['export', OP(1), '--output', '-out.jsonl', '--expected-revision', '1', '--operation-id', OP(2)],
    ]) {
      const run = aipcs(argv);
      expect(run.status, argv.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr, argv.join(' ')).toMatch(/^usage: aipcs [a-z ]+ \[options\]( <SERVICE_ID>)?\naipcs [a-z ]+: error: argument --[a-z-]+: expected one argument\n$/);
    }
    expect(aipcs(['config', 'show', '--profile', 'sqlite', '--principal-id=-agent']).envelope.result).toMatchObject({ identity: { principal_configured: true } });
    expect(aipcs(['config', 'show', '--profile', 'sqlite', '--principal-id', '-agent x']).status).toBe(0);
    expect(aipcs(['config', 'show', '--principal-id', '-']).status).toBe(0);
    // A negative number is a value, refused by the lexical rule (an envelope).
    const negative = aipcs(['service', 'suspend', OP(1), '--expected-revision', '-1', '--operation-id', OP(2)]);
    expect(negative.status).toBe(2);
    expect(negative.envelope.error?.issues[0]?.path).toBe('--expected-revision');
  });
});
