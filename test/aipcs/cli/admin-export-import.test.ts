// `aipcs export` and `aipcs import` through the built CLI: results, receipts,
// file publication (0600, never overwriting, no temp left), replays, the
// preconditions and refusals, and import of damaged or unusual inputs with
// nothing written (the codec's own tests cover the bytes; these cover the
// command: exit code, output, zero writes).

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, aipcsAsync, createNote, freshDataRoot, materialisedService, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { aipcsBin } from '../../support/bins.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';
import { parseJson, type JsonObject } from '../../../src/common/json.js';
import { frameLine } from '../portable/fixtures.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const FAIL_FS_PRELOAD = resolve(dirname(fileURLToPath(import.meta.url)), '../../support/fail-fs-call.mjs');
// The aip tests' race preload: changes one path just before a chosen file system call.
// Zero bytes from node:crypto's randomBytes: the export's temp name is known in advance.
const FIXED_RANDOM_PRELOAD = resolve(dirname(fileURLToPath(import.meta.url)), '../../support/fixed-random-bytes.mjs');
const CHANGE_AT_PRELOAD = resolve(dirname(fileURLToPath(import.meta.url)), '../../aip/support/change-at.mjs');
const TIMESTAMP27 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** What the registry and the store directory hold, for "nothing was written" checks. */
/** A valid manifest of 32 entities of 58 undescribed string fields: small, and near the byte bounds once described. */
function wideSchema() {
  const managed = (wireNotesManifest()['entities'] as { attributes: JsonObject[] }[])[0]!.attributes.slice(0, 6);
  return {
    manifest_version: 2,
    schema_version: 1,
    entities: Array.from({ length: 32 }, (_, e) => ({ name: `e${e}`, attributes: [...managed, ...Array.from({ length: 58 }, (_, a) => ({ name: `a${a}`, type: 'string' }))] })),
    relationships: [],
    indices: [],
    query_patterns: [],
    discovery_facets: [],
    retrieval_guidance: 'g',
  };
}

/**
 * Gives the registry copy of a wideSchema() service's manifest descriptions
 * (no layout change, each within its bound): 1000 characters per entity and
 * the longest of 500, 499, ... per domain field whose JSON size `fits`.
 * Returns that size in bytes. Design could not accept such a manifest.
 */
function inflateStoredManifest(dataRoot: string, serviceId: string, fits: (bytes: number) => boolean): number {
  const registry = new Database(join(dataRoot, 'registry.sqlite'));
  try {
    const stored = JSON.parse((registry.prepare('SELECT manifest_json FROM aipcs_registry_service WHERE service_id = ?').get(serviceId) as { manifest_json: string }).manifest_json) as {
      entities: { description?: string; attributes: { name: string; description?: string }[] }[];
    };
    for (let length = 500; length > 0; length--) {
      for (const entity of stored.entities) {
        entity.description = 'd'.repeat(1000);
        for (const attribute of entity.attributes) if (attribute.name.startsWith('a')) attribute.description = 'x'.repeat(length);
      }
      const inflated = JSON.stringify(stored);
      if (!fits(Buffer.byteLength(inflated))) continue;
      registry.prepare('UPDATE aipcs_registry_service SET manifest_json = ? WHERE service_id = ?').run(inflated, serviceId);
      return Buffer.byteLength(inflated);
    }
    throw new Error('no description length fits');
  } finally {
    registry.close();
  }
}

function registryFacts(dataRoot: string): unknown {
  let stores: string[] = [];
  try {
    stores = readdirSync(join(dataRoot, 'service-stores')).filter((name) => name.endsWith('.sqlite')).sort();
  } catch {
    stores = [];
  }
  let rows: unknown = null;
  try {
    const db = new Database(join(dataRoot, 'registry.sqlite'), { readonly: true });
    rows = ['aipcs_registry_service', 'aipcs_registry_claim', 'aipcs_registry_identity', 'aipcs_registry_receipt'].map((table) => db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all());
    db.close();
  } catch {
    rows = 'no registry';
  }
  return { stores, rows };
}

describe('aipcs export and import', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let args: string[];
  let work: string;
  let suspendedId: string;
  let artefact: string;
  let artefactBytes: Buffer;

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    args = rootArgs(dataRoot);
    work = mkdtempSync(join(tmpdir(), 'aipcs-artefacts-'));
    suspendedId = await materialisedService(client, 'exported');
    await createNote(client, suspendedId, { title: 'One', tags: ['a'] });
    await createNote(client, suspendedId, { title: 'Two', confidence: 0.25 });
    expect(aipcs(['service', 'suspend', suspendedId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
    artefact = join(work, 'exported.jsonl');
    const run = aipcs(['export', suspendedId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
    expect(run.status, run.stderr).toBe(0);
    artefactBytes = readFileSync(artefact);
  });

  afterAll(async () => {
    await client.close();
  });

  describe('export', () => {
    it('prints the summary and a verified receipt, and publishes a 0600 file without leaving a temp file', () => {
      const run = aipcs(['export', suspendedId, '--output', join(work, 'again.jsonl'), '--expected-revision', '4', '--operation-id', OP(3), ...args]);
      expect(run.status).toBe(0);
      const result = run.envelope.result as Record<string, Record<string, unknown>>;
      expect(Object.keys(result)).toEqual(['operation', 'operation_id', 'summary', 'receipt']);
      expect(Object.keys(result['summary'] ?? {})).toEqual(['export_format_version', 'source_backend', 'root_sha256', 'frame_count', 'total_byte_count', 'sections']);
      expect(result['summary']).toMatchObject({ export_format_version: 1, source_backend: 'sqlite', frame_count: 7, sections: { header: 1, service: 1, record: 2, history: 2, branch: 0, branch_membership: 0, audit: 0 } });
      expect(Object.keys(result['receipt'] ?? {})).toEqual([
        'receipt_id', 'kind', 'service_id', 'bundle_root_sha256', 'export_format_version', 'backend', 'service_revision', 'operational_status', 'verification', 'created_at',
      ]);
      expect(result['receipt']).toMatchObject({ kind: 'export', service_id: suspendedId, export_format_version: 1, backend: 'sqlite', service_revision: 4, operational_status: 'suspended', verification: 'verified' });
      expect(result['receipt']?.['bundle_root_sha256']).toBe(result['summary']?.['root_sha256']);
      expect(result['receipt']?.['created_at']).toMatch(TIMESTAMP27);
      expect(statSync(join(work, 'again.jsonl')).mode & 0o777).toBe(0o600);
      expect(readdirSync(work).filter((name) => name.startsWith('.aipcs-export-'))).toEqual([]);
      expect(run.stdout).not.toContain(work);
      // Export does not change the revision.
      expect(aipcs(['service', 'inspect', suspendedId, ...args]).envelope.result?.['service_revision']).toBe(4);
    });

    it('reports progress on stderr in human mode only', async () => {
      const human = aipcs(['export', suspendedId, '--output', join(work, 'human.jsonl'), '--expected-revision', '4', '--operation-id', OP(30), '--format', 'human', ...args]);
      expect(human.status, human.stderr).toBe(0);
      // A phase slower than the progress interval (a loaded machine) adds interim lines before its 'done'.
      expect(human.stderr).toMatch(/^(aipcs export: writing \d[^\n]*\n)*aipcs export: writing done: \d+\.\d MB in \d+\.\d s\n$/);
      expect(human.stdout).toContain('operation: export');
      const machine = aipcs(['export', suspendedId, '--output', join(work, 'machine.jsonl'), '--expected-revision', '4', '--operation-id', OP(31), ...args]);
      expect([machine.status, machine.stderr]).toEqual([0, '']);

      const dry = aipcs(['import', '--input', artefact, '--dry-run', '--format', 'human', ...rootArgs(freshDataRoot())]);
      expect(dry.status, dry.stderr).toBe(0);
      expect(dry.stderr).toMatch(/^(aipcs import: validating \d[^\n]*\n)*aipcs import: validating done: \d+\.\d MB in \d+\.\d s\n$/);
      expect(aipcs(['import', '--input', artefact, '--dry-run', ...rootArgs(freshDataRoot())]).stderr).toBe('');

      const destination = freshDataRoot();
      await (await serveOn(destination)).close();
      const imported = aipcs(['import', '--input', artefact, '--operation-id', OP(32), '--yes', '--format', 'human', ...rootArgs(destination)]);
      expect(imported.status, imported.stderr).toBe(0);
      expect(imported.stderr).toMatch(/^(aipcs import: validating \d[^\n]*\n)*aipcs import: validating done: \d+\.\d MB in \d+\.\d s\n(aipcs import: staging \d[^\n]*\n)*aipcs import: staging done: \d+\.\d MB in \d+\.\d s\n$/);
    });

    it.runIf(process.platform === 'linux')('names files whose names are not UTF-8 by those bytes, as the reference\'s Python does (--output, --input)', () => {
      // Node decodes such an argument with U+FFFD: caf\xe9 and caf\xff named
      // the one file caf\ufffd, so the second export was already_exists and an
      // import read whatever file bore the U+FFFD name.
      const folder = mkdtempSync(join(tmpdir(), 'aipcs-nonutf8-names-'));
      const quoted = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;
      const run = (command: string): { status: number | null; code: unknown; operation: unknown } => {
        const result = spawnSync('/bin/sh', ['-c', `exec "$0" "$1" ${command} ${args.map(quoted).join(' ')}`, process.execPath, aipcsBin()], {
          cwd: folder, env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' }, encoding: 'utf8',
        });
        const envelope = JSON.parse(result.stdout || result.stderr) as { result?: JsonObject; error?: { code: string } };
        return { status: result.status, code: envelope.error?.code, operation: envelope.result?.['operation'] };
      };
      const exportTo = (printfName: string): ReturnType<typeof run> => run(`export ${suspendedId} --output "$(printf '${printfName}')" --expected-revision 4 --operation-id ${OP(60)}`);
      expect(exportTo('caf\\351.jsonl')).toMatchObject({ status: 0, operation: 'export' });
      expect(exportTo('caf\\377.jsonl')).toMatchObject({ status: 0, operation: 'export' });
      const names = readdirSync(folder, { encoding: 'buffer' }).map((name) => name.toString('hex')).sort();
      expect(names).toEqual([Buffer.from('caf\xe9.jsonl', 'latin1').toString('hex'), Buffer.from('caf\xff.jsonl', 'latin1').toString('hex')].sort());
      writeFileSync(join(folder, 'caf\ufffd.jsonl'), 'not an artefact');
      const importOf = (printfName: string): ReturnType<typeof run> => run(`import --input "$(printf '${printfName}')" --dry-run`);
      expect(importOf('caf\\351.jsonl')).toMatchObject({ status: 0, operation: 'import_dry_run' });
      expect(importOf('caf\\376.jsonl')).toMatchObject({ status: 6, code: 'storage_unavailable' });
    });

    it('replays byte-identically under the same operation id, to a new path only', () => {
      const copy = join(work, 'replay.jsonl');
      const run = aipcs(['export', suspendedId, '--output', copy, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
      expect(run.status).toBe(0);
      expect(readFileSync(copy).equals(artefactBytes)).toBe(true);
      const samePath = aipcs(['export', suspendedId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
      expect([samePath.status, samePath.envelope.error?.code]).toEqual([3, 'already_exists']);
      expect(readFileSync(artefact).equals(artefactBytes)).toBe(true);
    });

    it('never overwrites: an existing file, directory or dangling symlink is already_exists before any registry work', () => {
      const target = join(work, 'taken.jsonl');
      writeFileSync(target, 'mine');
      const dangling = join(work, 'dangling.jsonl');
      symlinkSync(join(work, 'nowhere'), dangling);
      const before = registryFacts(dataRoot);
      for (const path of [target, dangling, work]) {
        const run = aipcs(['export', suspendedId, '--output', path, '--expected-revision', '4', '--operation-id', OP(4), ...args]);
        expect([run.status, run.envelope.error?.code]).toEqual([3, 'already_exists']);
      }
      // No claim and no receipt: a receipt here would name bytes no file holds (and could authorise a purge).
      expect(registryFacts(dataRoot)).toEqual(before);
      expect(readFileSync(target, 'utf8')).toBe('mine');
      // Nothing was admitted: the operation id is still free.
      const free = aipcs(['export', suspendedId, '--output', join(work, 'free.jsonl'), '--expected-revision', '4', '--operation-id', OP(4), ...args]);
      expect(free.status).toBe(0);
    });

    it('an output in a missing folder or below a file is storage_unavailable (6), leaves no file and admits nothing', () => {
      const file = join(work, 'plain-file');
      writeFileSync(file, 'mine');
      for (const path of [join(work, 'no-such-folder', 'out.jsonl'), join(file, 'out.jsonl')]) {
        const run = aipcs(['export', suspendedId, '--output', path, '--expected-revision', '4', '--operation-id', OP(43), ...args]);
        expect([run.status, run.envelope.error?.code, run.envelope.error?.retryable, run.stdout]).toEqual([6, 'storage_unavailable', false, '']);
        expect(run.stderr).not.toContain(work);
      }
      expect(readFileSync(file, 'utf8')).toBe('mine');
      expect(readdirSync(work).filter((name) => name.endsWith('.tmp'))).toEqual([]);
      // The output is checked before any registry work: with a data root not yet created, it is still the output that is reported.
      const early = aipcs(['export', suspendedId, '--output', join(file, 'out.jsonl'), '--expected-revision', '4', '--operation-id', OP(43), ...rootArgs(freshDataRoot())]);
      expect([early.status, early.envelope.error?.code, early.envelope.error?.issues[0]?.code]).toEqual([6, 'storage_unavailable', 'output_unavailable']);
      // The operation id is still free: the same command to a writable path exports.
      const free = aipcs(['export', suspendedId, '--output', join(work, 'after-missing-folder.jsonl'), '--expected-revision', '4', '--operation-id', OP(43), ...args]);
      expect(free.status, free.stderr).toBe(0);
    });

    it('publishes a 0600 file under a umask that would narrow it (0277 makes 0400)', () => {
      const folder = mkdtempSync(join(tmpdir(), 'aipcs-export-umask-'));
      const path = join(folder, 'narrow.jsonl');
      const run = spawnSync('/bin/sh', ['-c', 'umask 0277 && exec "$0" "$@"', process.execPath, aipcsBin(), 'export', suspendedId, '--output', path, '--expected-revision', '4', '--operation-id', OP(146), ...args], {
        env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.status, run.stderr).toBe(0);
      expect((statSync(path).mode & 0o777).toString(8)).toBe('600');
    });

    it('a destination that appears while the export runs is already_exists (3), is left as it was, and no temp file stays', () => {
      const folder = mkdtempSync(join(tmpdir(), 'aipcs-export-race-'));
      const path = join(folder, 'raced.jsonl');
      // Another process creates the destination after the existence check, as the temp file is opened.
      const run = spawnSync(process.execPath, ['--import', CHANGE_AT_PRELOAD, aipcsBin(), 'export', suspendedId, '--output', path, '--expected-revision', '4', '--operation-id', OP(147), ...args], {
        env: {
          PATH: process.env['PATH'] ?? '',
          HOME: process.env['HOME'] ?? '/root',
          AIP_TEST_CHANGE_AT: 'openSync:1',
          AIP_TEST_CHANGE_MATCH: '.aipcs-export-',
          AIP_TEST_CHANGE_PATH: path,
          AIP_TEST_CHANGE_DO: 'text',
          AIP_TEST_CHANGE_TEXT: 'theirs',
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      const envelope = JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '') as { error: { code: string } };
      expect([run.status, envelope.error.code, run.stdout]).toEqual([3, 'already_exists', '']);
      expect(readFileSync(path, 'utf8')).toBe('theirs');
      expect(readdirSync(folder)).toEqual(['raced.jsonl']);
    });

    it('a file system failing the temp file beside the destination (its creation, mode, a write, its fsync) is storage_unavailable (6) naming --output, and nothing is left or published', () => {
      for (const [call, n] of [['openSync', 152], ['fchmodSync', 148], ['writeSync', 149], ['fsyncSync', 150]] as const) {
        const folder = mkdtempSync(join(tmpdir(), 'aipcs-temp-fails-'));
        // The temp file is opened beside the destination (§1.9.4); the first other such call
        // of the CLI's own code is the temp file's (SQLite's writes and syncs do not go through node:fs).
        const match = call === 'openSync' ? `${folder}/.aipcs-export-` : '';
        const run = spawnSync(process.execPath, ['--import', FAIL_FS_PRELOAD, aipcsBin(), 'export', suspendedId, '--output', join(folder, 'out.jsonl'), '--expected-revision', '4', '--operation-id', OP(n), ...args], {
          env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', AIPCS_TEST_FAIL_FS: call, AIPCS_TEST_FAIL_MATCH: match },
          encoding: 'utf8',
          timeout: 60_000,
        });
        const envelope = JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '') as { error: { code: string; issues: { code: string; path: string }[] } };
        expect([run.status, envelope.error.code, envelope.error.issues.map((issue) => [issue.code, issue.path]), run.stdout], call).toEqual([6, 'storage_unavailable', [['output_unavailable', '--output']], '']);
        expect(readdirSync(folder), call).toEqual([]);
      }
    });

    it.runIf(spawnSync('strace', ['-V']).status === 0)('a folder fsync failing with EIO after the link is operation_uncertain (4): the artefact is in place, its durability unconfirmed', () => {
      const folder = mkdtempSync(join(tmpdir(), 'aipcs-folder-sync-fails-'));
      // -P: only the fsync of a descriptor of the output folder itself fails.
      const run = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-P', folder, '-e', 'trace=fsync', '-e', 'inject=fsync:error=EIO', process.execPath, aipcsBin(), 'export', suspendedId, '--output', join(folder, 'out.jsonl'), '--expected-revision', '4', '--operation-id', OP(151), ...args], {
        env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      const envelope = JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '') as { error: { code: string } };
      expect([run.status, envelope.error.code, run.stdout]).toEqual([4, 'operation_uncertain', '']);
      expect(readdirSync(folder)).toEqual(['out.jsonl']);
    });

    it('never writes through its temp name: a file or a symbolic link planted there is storage_unavailable (6) and left as it was', () => {
      for (const [plant, n] of [['file', 153], ['link', 154]] as const) {
        const folder = mkdtempSync(join(tmpdir(), 'aipcs-planted-temp-'));
        // With zero "random" bytes the temp name is known in advance.
        const temp = `.aipcs-export-${'00'.repeat(16)}.tmp`;
        const victim = join(mkdtempSync(join(tmpdir(), 'aipcs-planted-victim-')), 'victim');
        writeFileSync(victim, 'theirs');
        if (plant === 'file') writeFileSync(join(folder, temp), 'theirs');
        else symlinkSync(victim, join(folder, temp));
        const run = spawnSync(process.execPath, ['--import', FIXED_RANDOM_PRELOAD, aipcsBin(), 'export', suspendedId, '--output', join(folder, 'out.jsonl'), '--expected-revision', '4', '--operation-id', OP(n), ...args], {
          env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
          encoding: 'utf8',
          timeout: 60_000,
        });
        const envelope = JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '') as { error: { code: string } };
        expect([run.status, envelope.error.code, run.stdout], plant).toEqual([6, 'storage_unavailable', '']);
        expect(readdirSync(folder), plant).toEqual([temp]);
        expect(readFileSync(join(folder, temp), 'utf8'), plant).toBe('theirs');
        expect(readFileSync(victim, 'utf8'), plant).toBe('theirs');
      }
    });

    it('a failure after the artefact was published is operation_uncertain (4, retryable), never storage_unavailable, and leaves no temp file', () => {
      const folder = mkdtempSync(join(tmpdir(), 'aipcs-publish-'));
      const path = join(folder, 'published.jsonl');
      // The temp name's unlink, right after the hard link made the artefact appear, fails once.
      const run = spawnSync(process.execPath, ['--import', FAIL_FS_PRELOAD, aipcsBin(), 'export', suspendedId, '--output', path, '--expected-revision', '4', '--operation-id', OP(145), ...args], {
        env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', AIPCS_TEST_FAIL_FS: 'unlinkSync', AIPCS_TEST_FAIL_MATCH: '.aipcs-export-' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      const envelope = JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '') as { error: { code: string; retryable: boolean } };
      expect([run.status, envelope.error.code, envelope.error.retryable, run.stdout]).toEqual([4, 'operation_uncertain', true, '']);
      // The artefact is in place (its durability unconfirmed); the temp name is gone all the same.
      expect(readdirSync(folder)).toEqual(['published.jsonl']);
      expect(readFileSync(path, 'utf8').split('\n')[1]).toBe(artefactBytes.toString('utf8').split('\n')[1]);
    });

    it('a .. in --output is the folder the file system finds there, never a lexical shortcut', () => {
      // hop -> deep/dir, so hop/.. is deep (the kernel's reading), not work.
      mkdirSync(join(work, 'deep', 'dir'), { recursive: true });
      symlinkSync(join(work, 'deep', 'dir'), join(work, 'hop'));
      const viaLink = aipcs(['export', suspendedId, '--output', `${work}/hop/../via-link.jsonl`, '--expected-revision', '4', '--operation-id', OP(44), ...args]);
      expect(viaLink.status, viaLink.stderr).toBe(0);
      expect(statSync(join(work, 'deep', 'via-link.jsonl')).mode & 0o777).toBe(0o600);
      expect(readdirSync(work)).not.toContain('via-link.jsonl');
      // A missing folder before .. names nothing: refused like any missing folder.
      const missing = aipcs(['export', suspendedId, '--output', `${work}/no-such-folder/../lexical.jsonl`, '--expected-revision', '4', '--operation-id', OP(45), ...args]);
      expect([missing.status, missing.envelope.error?.code]).toEqual([6, 'storage_unavailable']);
      expect(readdirSync(work)).not.toContain('lexical.jsonl');
    });

    it('refuses an active materialised service, a stale revision and missing machine flags', async () => {
      const active = await materialisedService(client, 'active_export');
      const refused = aipcs(['export', active, '--output', join(work, 'active.jsonl'), '--expected-revision', '3', '--operation-id', OP(5), ...args]);
      expect([refused.status, refused.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
      const stale = aipcs(['export', suspendedId, '--output', join(work, 'stale.jsonl'), '--expected-revision', '3', '--operation-id', OP(6), ...args]);
      expect([stale.status, stale.envelope.error?.code]).toEqual([3, 'stale_revision']);
      const noRevision = aipcs(['export', suspendedId, '--output', join(work, 'x.jsonl'), '--operation-id', OP(7), ...args]);
      expect([noRevision.status, noRevision.envelope.error?.issues[0]?.path]).toEqual([2, '--expected-revision']);
      const badPath = aipcs(['export', suspendedId, '--output', `${work}/..`, '--expected-revision', '4', '--operation-id', OP(7), ...args]);
      expect([badPath.status, badPath.envelope.error?.issues[0]?.path]).toEqual([2, '--output']);
      const noOutput = aipcs(['export', suspendedId, '--expected-revision', '4', '--operation-id', OP(7), ...args]);
      expect(noOutput.status).toBe(2);
      expect(noOutput.stderr).toContain('--output');
      expect(readdirSync(work).filter((name) => name.startsWith('.aipcs-export-'))).toEqual([]);
    });

    it('refuses a service whose manifest cannot fit one artefact line before any claim, leaving it usable', async () => {
      // Design now refuses a manifest over the byte bound (decisions-aipcs-contract.md
      // "Page byte budget"); a service designed by an older build may still hold
      // one. Simulated: a small manifest is designed and materialised, then its
      // registry copy gains descriptions (no layout change) that take it to about
      // 1.1 MB, beyond the artefact's 1 MiB line.
      const schema = wideSchema();
      const described = {
        ...schema,
        entities: schema.entities.map((entity) => ({
          ...entity,
          description: 'd'.repeat(1000),
          attributes: entity.attributes.map((attribute) => (String(attribute['name']).startsWith('a') ? { ...attribute, description: 'x'.repeat(500) } : attribute)),
        })),
      };
      const tooLarge = await client.call('aipcs_service_design', { service_id: await seedService(client, 'huge_refused'), schema: described, idempotency_key: 'huge-refused' });
      expect([tooLarge.error?.code, tooLarge.error?.issues.map((issue) => [issue.code, issue.path])]).toEqual(['validation_failed', [['invalid_length', 'schema']]]);
      const serviceId = await seedService(client, 'huge_manifest');
      expect((await client.call('aipcs_service_design', { service_id: serviceId, schema, idempotency_key: 'huge-design' })).ok).toBe(true);
      expect((await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'huge-mat' })).ok).toBe(true);
      expect(inflateStoredManifest(dataRoot, serviceId, () => true)).toBeGreaterThan(1024 * 1024);
      // The lifecycle results print the whole manifest: more than spawnSync's default buffer.
      expect((await aipcsAsync(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(40), ...args])).status).toBe(0);
      const before = registryFacts(dataRoot);
      const refused = aipcs(['export', serviceId, '--output', join(work, 'huge.jsonl'), '--expected-revision', '4', '--operation-id', OP(41), ...args]);
      // invalid_length: too long, not a value the line cannot carry (transfer-manifest.test.ts has that one).
      expect([refused.status, refused.envelope.error?.code, refused.envelope.error?.issues[0]?.path, refused.envelope.error?.issues[0]?.code]).toEqual([
        3,
        'unsupported_transition',
        'service.manifest',
        'invalid_length',
      ]);
      expect(registryFacts(dataRoot)).toEqual(before);
      expect(readdirSync(work).filter((name) => name.startsWith('.aipcs-export-') || name === 'huge.jsonl')).toEqual([]);
      // Before, the failure surfaced while encoding and froze the service as recovery_required for ever.
      const inspect = await client.call('aipcs_service_inspect', { service_id: serviceId });
      expect(inspect.result).toMatchObject({ recovery_state: 'clear', operational_status: 'suspended' });
      expect((await aipcsAsync(['service', 'resume', serviceId, '--expected-revision', '4', '--operation-id', OP(42), ...args])).status).toBe(0);
      expect((await client.call('aipcs_record_list', { service_id: serviceId, entity_name: 'e0' })).ok).toBe(true);
    });

    it('moves a manifest past design\'s byte bound that still fits the artefact line: import leaves that bound to the line', async () => {
      // Design refuses a manifest over 1,040,384 bytes; an artefact's service
      // line may carry one up to the 1 MiB line limit (operations §5.7), and
      // import accepts every line the format allows. Simulated as above: the
      // registry copy of a designed manifest gains descriptions.
      const schema = wideSchema();
      const serviceId = await seedService(client, 'large_manifest');
      expect((await client.call('aipcs_service_design', { service_id: serviceId, schema, idempotency_key: 'large-design' })).ok).toBe(true);
      const size = inflateStoredManifest(dataRoot, serviceId, (bytes) => bytes < 1_046_000);
      expect(size).toBeGreaterThan(1_040_384 + 2000);
      const path = join(work, 'large.jsonl');
      const exported = await aipcsAsync(['export', serviceId, '--output', path, '--expected-revision', '2', '--operation-id', OP(50), ...args]);
      expect(exported.status, exported.stderr).toBe(0);
      const serviceLine = readFileSync(path, 'utf8').split('\n')[1] as string;
      expect(Buffer.byteLength(serviceLine) + 1).toBeGreaterThan(size);
      expect(Buffer.byteLength(serviceLine) + 1).toBeLessThanOrEqual(1024 * 1024);

      const other = freshDataRoot();
      await (await serveOn(other)).close();
      const imported = await aipcsAsync(['import', '--input', path, '--operation-id', OP(51), '--yes', ...rootArgs(other)]);
      expect(imported.status, imported.stderr).toBe(0);
      const again = await aipcsAsync(['export', serviceId, '--output', join(work, 'large-again.jsonl'), '--expected-revision', '2', '--operation-id', OP(52), ...rootArgs(other)]);
      expect(again.status, again.stderr).toBe(0);
      expect(readFileSync(join(work, 'large-again.jsonl'), 'utf8').split('\n')[1]).toBe(serviceLine);
    });

    it('exports a seeded service in any status, and refuses to replay once the revision moved', async () => {
      const seeded = await seedService(client, 'seeded_export');
      const path = join(work, 'seeded.jsonl');
      const run = aipcs(['export', seeded, '--output', path, '--expected-revision', '1', '--operation-id', OP(8), ...args]);
      expect(run.status).toBe(0);
      expect(run.envelope.result?.['summary']).toMatchObject({ frame_count: 3, sections: { record: 0 } });
      expect(aipcs(['service', 'suspend', seeded, '--expected-revision', '1', '--operation-id', OP(9), ...args]).status).toBe(0);
      const replay = aipcs(['export', seeded, '--output', join(work, 'seeded-again.jsonl'), '--expected-revision', '1', '--operation-id', OP(8), ...args]);
      expect([replay.status, replay.envelope.error?.code]).toEqual([3, 'stale_revision']);
    });
  });

  describe('import', () => {
    it('dry-runs without a registry and without writing anything', () => {
      const empty = freshDataRoot();
      const run = aipcs(['import', '--input', artefact, '--dry-run', ...rootArgs(empty)]);
      expect(run.status).toBe(0);
      expect(Object.keys(run.envelope.result ?? {})).toEqual(['operation', 'summary', 'service']);
      expect(run.envelope.result?.['service']).toEqual({
        service_id: suspendedId,
        domain_name: 'exported',
        domain_class: 'knowledge',
        intent_description: 'Project notes.',
        design_state: 'materialised',
        operational_status: 'suspended',
        schema_version: 1,
        service_revision: 4,
      });
      expect(run.stdout).not.toContain(work);
      expect(() => statSync(empty)).toThrow();
    });

    it('dry-runs only where the import would compose: an unset DSN variable or a root the textual rules reject is storage_unavailable (exit 6); a root unsafe on disk is the state of the registry', () => {
      const refusedAtComposition = [
        ['--profile', 'postgresql', '--principal-id', 'local-agent', '--postgres-dsn-env', 'AIPCS_TEST_UNSET_DSN'],
        ['--profile', 'sqlite', '--principal-id', 'local-agent', '--sqlite-data-root', '/'],
      ];
      for (const configuration of refusedAtComposition) {
        const dry = aipcs(['import', '--input', artefact, '--dry-run', ...configuration]);
        const status = aipcs(['status', ...configuration]);
        expect([dry.status, dry.envelope.error?.code], configuration.join(' ')).toEqual([6, 'storage_unavailable']);
        expect([status.status, status.envelope.error?.code], configuration.join(' ')).toEqual([6, 'storage_unavailable']);
      }
      // A root open to others (ops spec §3.2.2) needs no registry for a dry
      // run; status reports the registry unavailable (exit 0, §1.8), and the
      // import itself, which needs the registry, is refused.
      const open = join(mkdtempSync(join(tmpdir(), 'aipcs-open-root-')), 'data');
      mkdirSync(open, { mode: 0o777 });
      chmodSync(open, 0o777);
      const dry = aipcs(['import', '--input', artefact, '--dry-run', ...rootArgs(open)]);
      expect([dry.status, dry.envelope.result?.['operation']]).toEqual([0, 'import_dry_run']);
      const status = aipcs(['status', ...rootArgs(open)]);
      expect(status.status).toBe(0);
      expect(status.envelope.result?.['registry']).toEqual({ component: 'registry', backend: 'sqlite', status: 'unavailable', applied_revision: null, target_revision: null, issue_code: 'storage_unavailable' });
      expect(status.envelope.result?.['overall']).toBe('unavailable');
      const real = aipcs(['import', '--input', artefact, '--operation-id', OP(19), '--yes', ...rootArgs(open)]);
      expect([real.status, real.envelope.error?.code]).toEqual([6, 'storage_unavailable']);
      expect(readdirSync(open)).toEqual([]);
    });

    it('checks its flags: a dry run takes no operation id or --yes; an import needs both in machine mode', () => {
      const cases: [string[], string][] = [
        [['--dry-run', '--operation-id', OP(20)], '--operation-id'],
        [['--dry-run', '--yes'], '--yes'],
        [['--operation-id', OP(20)], '--yes'],
        [['--yes'], '--operation-id'],
        [['--operation-id', 'nope', '--yes'], '--operation-id'],
      ];
      for (const [extra, path] of cases) {
        const run = aipcs(['import', '--input', artefact, ...extra, ...args]);
        expect([run.status, run.envelope.error?.code, run.envelope.error?.issues[0]?.path], extra.join(' ')).toEqual([2, 'validation_failed', path]);
      }
    });

    it('refuses identity and domain collisions with already_exists and writes nothing', async () => {
      const before = registryFacts(dataRoot);
      const live = aipcs(['import', '--input', artefact, '--operation-id', OP(21), '--yes', ...args]);
      expect([live.status, live.envelope.error?.code]).toEqual([3, 'already_exists']);
      expect(registryFacts(dataRoot)).toEqual(before);
      // The id is live for another principal of this registry: known in any state, for any principal (ops §1.9.5).
      const foreign = aipcs(['import', '--input', artefact, '--operation-id', OP(23), '--yes', ...rootArgs(dataRoot, 'someone-else')]);
      expect([foreign.status, foreign.envelope.error?.code]).toEqual([3, 'already_exists']);
      expect(registryFacts(dataRoot)).toEqual(before);

      // Another root where the domain name is already live for this principal.
      const other = freshDataRoot();
      const otherClient = await serveOn(other);
      try {
        await seedService(otherClient, 'exported');
        const domain = aipcs(['import', '--input', artefact, '--operation-id', OP(22), '--yes', ...rootArgs(other)]);
        expect([domain.status, domain.envelope.error?.code]).toEqual([3, 'already_exists']);
        // A different principal on the same root has no such domain.
        const elsewhere = aipcs(['import', '--input', artefact, '--operation-id', OP(22), '--yes', ...rootArgs(other, 'someone-else')]);
        expect(elsewhere.status, elsewhere.stderr).toBe(0);
        expect(elsewhere.envelope.result).toMatchObject({ operation: 'import', service: { service_id: suspendedId, operational_status: 'suspended' } });
        const replay = aipcs(['import', '--input', artefact, '--operation-id', OP(22), '--yes', ...rootArgs(other, 'someone-else')]);
        expect(replay.stdout).toBe(elsewhere.stdout);
      } finally {
        await otherClient.close();
      }
    });

    it('export needs a ready registry, and refused there leaves nothing beside --output', () => {
      const folder = mkdtempSync(join(tmpdir(), 'aipcs-export-unready-'));
      const run = aipcs(['export', OP(24), '--output', join(folder, 'out.jsonl'), '--expected-revision', '1', '--operation-id', OP(25), ...rootArgs(freshDataRoot())]);
      expect([run.status, run.envelope.error?.code]).toEqual([3, 'storage_migration_required']);
      expect(readdirSync(folder)).toEqual([]);
    });

    it('needs a ready registry for an actual import (not for a dry run)', () => {
      const empty = freshDataRoot();
      const run = aipcs(['import', '--input', artefact, '--operation-id', OP(23), '--yes', ...rootArgs(empty)]);
      // A missing root reads as an uninitialised registry: only serve migrates it.
      expect([run.status, run.envelope.error?.code]).toEqual([3, 'storage_migration_required']);
      expect(() => statSync(empty)).toThrow();
    });

    it('validates the whole artefact before it opens storage: a bad one leaves the data root untouched', () => {
      const destination = join(mkdtempSync(join(tmpdir(), 'aipcs-untouched-')), 'data');
      mkdirSync(destination, { mode: 0o700 });
      const bad = join(work, 'truncated-for-untouched.jsonl');
      writeFileSync(bad, artefactBytes.subarray(0, artefactBytes.length - 10));
      const before = statSync(destination).mtimeMs;
      const run = aipcs(['import', '--input', bad, '--operation-id', OP(24), '--yes', ...rootArgs(destination)]);
      expect([run.status, run.envelope.error?.code]).toEqual([2, 'validation_failed']);
      expect(readdirSync(destination)).toEqual([]);
      expect(statSync(destination).mtimeMs).toBe(before);
      // Nor is storage composed first: an unset DSN variable would refuse it (storage_unavailable).
      const unset = aipcs(['import', '--input', bad, '--operation-id', OP(24), '--yes', '--profile', 'postgresql', '--principal-id', 'local-agent', '--postgres-dsn-env', 'AIPCS_TEST_UNSET_DSN']);
      expect([unset.status, unset.envelope.error?.code]).toEqual([2, 'validation_failed']);
    });

    it('rejects symlinks, directories and FIFOs as invalid input, and a missing file as storage_unavailable', () => {
      const link = join(work, 'link.jsonl');
      symlinkSync(artefact, link);
      const fifo = join(work, 'pipe.jsonl');
      execFileSync('mkfifo', [fifo]);
      const directory = join(work, 'a-directory');
      mkdirSync(directory);
      for (const path of [link, fifo, directory, join(work, 'absent.jsonl')]) {
        for (const extra of [['--dry-run'], ['--operation-id', OP(24), '--yes']]) {
          const run = aipcs(['import', '--input', path, ...extra, ...args]);
          if (path.endsWith('absent.jsonl')) expect([run.status, run.envelope.error?.code], path).toEqual([6, 'storage_unavailable']);
          else expect([run.status, run.envelope.error?.code, run.envelope.error?.issues[0]?.path], path).toEqual([2, 'validation_failed', '--input']);
          expect(run.stderr).not.toContain(work);
          expect(run.stdout).not.toContain(work);
        }
      }
    });

    describe('tampered artefacts: exit 2, validation_failed, nothing written', () => {
      const lines = (): string[] => artefactBytes.toString('utf8').split('\n').slice(0, -1);
      const cases: [string, () => Buffer][] = [
        ['a flipped byte in a record', () => Buffer.from(artefactBytes.toString('utf8').replace('"One"', '"Onf"'))],
        ['a truncated trailer', () => artefactBytes.subarray(0, artefactBytes.length - 10)],
        ['bytes after the trailer', () => Buffer.concat([artefactBytes, Buffer.from('\n')])],
        ['two records swapped', () => {
          const l = lines();
          [l[2], l[3]] = [l[3] as string, l[2] as string];
          return Buffer.from(`${l.join('\n')}\n`);
        }],
        ['a CRLF line ending', () => Buffer.from(artefactBytes.toString('utf8').replace('\n', '\r\n'))],
        ['an empty file', () => Buffer.alloc(0)],
        ['a line removed', () => {
          const l = lines();
          l.splice(4, 1);
          return Buffer.from(`${l.join('\n')}\n`);
        }],
        ['a record line duplicated', () => {
          const l = lines();
          l.splice(3, 0, l[2] as string);
          return Buffer.from(`${l.join('\n')}\n`);
        }],
        ['a record substituted on a correctly re-hashed line', () => {
          const l = lines();
          const at = l.findIndex((line) => line.startsWith('{"kind":"record"'));
          const payload = (parseJson(l[at] as string) as JsonObject)['payload'] as JsonObject;
          payload['created_via'] = payload['created_via'] === 'cli' ? 'mcp' : 'cli';
          const rehashed = frameLine('record', at, payload);
          expect(rehashed).not.toBe(l[at]);
          l[at] = rehashed;
          return Buffer.from(`${l.join('\n')}\n`);
        }],
      ];
      it('name the defective line, never its content (issue path artifact.line[N], N its zero-based ordinal)', () => {
        const lines = artefactBytes.toString('utf8').split('\n');
        const at = lines.findIndex((line) => line.includes('"One"'));
        const path = join(work, 'tampered-line-named.jsonl');
        writeFileSync(path, artefactBytes.toString('utf8').replace('"One"', '"Onf"'));
        const run = aipcs(['import', '--input', path, '--dry-run', ...args]);
        expect([run.status, run.envelope.error?.issues[0]?.code, run.envelope.error?.issues[0]?.path]).toEqual([2, 'artifact_invalid', `artifact.line[${at}]`]);
        expect(run.stderr).not.toContain('Onf');
      });

      for (const [name, damage] of cases) {
        it(name, async () => {
          const path = join(work, `tampered-${name.replaceAll(' ', '-')}.jsonl`);
          writeFileSync(path, damage());
          const other = freshDataRoot();
          const otherClient = await serveOn(other);
          await otherClient.close();
          const before = registryFacts(other);
          const dry = aipcs(['import', '--input', path, '--dry-run', ...rootArgs(other)]);
          expect([dry.status, dry.envelope.error?.code, dry.stdout]).toEqual([2, 'validation_failed', '']);
          const actual = aipcs(['import', '--input', path, '--operation-id', OP(25), '--yes', ...rootArgs(other)]);
          expect([actual.status, actual.envelope.error?.code, actual.stdout]).toEqual([2, 'validation_failed', '']);
          expect(actual.envelope.error?.issues[0]?.code).toBe('artifact_invalid');
          expect(registryFacts(other)).toEqual(before);
          // The operation id was not consumed: the intact artefact imports under it.
          const intact = aipcs(['import', '--input', artefact, '--operation-id', OP(25), '--yes', ...rootArgs(other)]);
          expect(intact.status, intact.stderr).toBe(0);
        });
      }
    });
  });
});
