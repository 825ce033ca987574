// `aipcs import` keeps its private copy of the artefact (the `aipcs-bundle-*`
// spool, ops spec §5.9) in TMPDIR. A TMPDIR left over from a session that is
// gone (a missing folder) made every import `storage_unavailable` although
// storage was fine; like Python's tempfile, which the reference spools with,
// the import now moves on to the system temp folder. The spool's modes are
// §5.9's whatever the umask.

import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ArtefactSpool } from '../../../src/aipcs/cli/artefact-files.js';
import { ownerTag } from '../../../src/common/process.js';
import { aipcsBin } from '../../support/bins.js';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import { nodeCommand } from '../../support/resource-limits.js';

const FAIL_FS_PRELOAD = resolve(dirname(fileURLToPath(import.meta.url)), '../../support/fail-fs-call.mjs');
const OP = (n: number): string => `00000000-0000-4000-8000-0000000071${n.toString().padStart(2, '0')}`;

/** Exports a suspended service of one note (domain `domain`) with operation ids `ops`; returns the artefact's path. */
async function oneNoteArtefact(domain: string, ops: readonly [number, number], folderPrefix: string): Promise<string> {
  const source = freshDataRoot();
  const client = await serveOn(source);
  let serviceId: string;
  try {
    serviceId = await materialisedService(client, domain);
    await createNote(client, serviceId, { title: 'One' });
  } finally {
    await client.close();
  }
  expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(ops[0]), '--yes', ...rootArgs(source)]).status).toBe(0);
  const artefact = join(mkdtempSync(join(tmpdir(), folderPrefix)), `${domain}.jsonl`);
  const exported = aipcs(['export', serviceId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(ops[1]), '--yes', ...rootArgs(source)]);
  expect(exported.status, exported.stderr).toBe(0);
  return artefact;
}

/** The run was refused as storage_unavailable with the one issue naming TMPDIR (exit 6). */
function expectSpoolUnavailable(run: { status: number | null; stdout: string; stderr: string }): void {
  expect(run.status, run.stderr).toBe(6);
  const error = (JSON.parse(run.stderr || run.stdout) as { error: { code: string; issues: { code: string; path: string }[] } }).error;
  expect([error.code, error.issues.map((issue) => [issue.code, issue.path])]).toEqual(['storage_unavailable', [['spool_unavailable', 'TMPDIR']]]);
}

describe('import spool with an unusable TMPDIR', () => {
  let artefact: string;

  beforeAll(async () => {
    artefact = await oneNoteArtefact('spooled', [1, 2], 'aipcs-spool-artefact-');
  });

  it.each([
    ['a missing absolute folder', '/nonexistent-aipcs-tmp/gone'],
    ['a missing relative folder', 'missing-relative-tmp'],
  ])('imports with TMPDIR naming %s', async (_what, tmp) => {
    const destination = freshDataRoot();
    const client = await serveOn(destination);
    await client.close();
    const run = aipcs(['import', '--input', artefact, '--operation-id', OP(3), '--yes', ...rootArgs(destination)], { env: { TMPDIR: tmp }, cwd: tmpdir() });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.envelope.result?.['operation']).toBe('import');
    const listed = aipcs(['service', 'list', ...rootArgs(destination)]);
    expect((listed.envelope.result?.['services'] as Record<string, unknown>[]).map((service) => service['domain_name'])).toEqual(['spooled']);
  });

  // A full temporary folder (mkdtemp and writes alike fail with ENOSPC,
  // injected here with strace) is refused as storage_unavailable with an
  // issue naming TMPDIR: the data root and the input are fine.
  it.runIf(spawnSync('strace', ['-V']).status === 0)('says that the temporary folder is what failed when no spool can be made', async () => {
    const destination = freshDataRoot();
    await (await serveOn(destination)).close();
    const importing = ['import', '--input', artefact, '--operation-id', OP(4), '--yes', ...rootArgs(destination)];
    const run = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=mkdir,mkdirat', '-e', 'inject=mkdir,mkdirat:error=ENOSPC', process.execPath, aipcsBin(), ...importing], {
      encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
    });
    expectSpoolUnavailable(run);
    // At --log-level info it says why, in fixed words, as for the input and output files.
    const told = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=mkdir,mkdirat', '-e', 'inject=mkdir,mkdirat:error=ENOSPC', process.execPath, aipcsBin(), ...importing, '--log-level', 'info'], {
      encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
    });
    expect(told.status).toBe(6);
    expect(told.stderr).toMatch(/^aipcs info: aipcs import: temporary copy unavailable: the file system is full\n\{"ok":false,/);
    // Nothing was admitted: the same import without the fault goes through.
    expect(aipcs(importing).status).toBe(0);
  });
});

describe('import spool on a full temporary folder', () => {
  it('a copy that cannot be written whole is storage_unavailable naming TMPDIR, and no spool is left', async () => {
    const artefact = await oneNoteArtefact('too_big_to_spool', [5, 6], 'aipcs-spool-full-artefact-');
    // A 1-block file size limit (512 or 1024 bytes) stands in for a full
    // temporary folder: the copy's write is cut short, then fails (EFBIG).
    // The artefact is read, and copied, before the registry is opened.
    expect(statSync(artefact).size).toBeGreaterThan(4096);
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-spool-full-'));
    const destination = freshDataRoot();
    await (await serveOn(destination)).close();
    const [command, commandArgs] = nodeCommand([aipcsBin(), 'import', '--input', artefact, '--operation-id', OP(7), '--yes', ...rootArgs(destination)], { fileSizeBlocks: 1 });
    const run = spawnSync(command, commandArgs, { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', TMPDIR: spools }, timeout: 60_000 });
    expectSpoolUnavailable(run);
    expect(readdirSync(spools)).toEqual([]);
  });

  it('a copy that cannot be created in the new spool folder is storage_unavailable naming TMPDIR, and the folder goes', () => {
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-spool-no-copy-'));
    // The copy is created before the input is read: any input does.
    const input = join(mkdtempSync(join(tmpdir(), 'aipcs-spool-no-copy-input-')), 'in.jsonl');
    writeFileSync(input, '{}\n');
    const destination = freshDataRoot();
    const run = spawnSync(process.execPath, ['--import', FAIL_FS_PRELOAD, aipcsBin(), 'import', '--input', input, '--operation-id', OP(8), '--yes', ...rootArgs(destination)], {
      encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', TMPDIR: spools, AIPCS_TEST_FAIL_FS: 'openSync', AIPCS_TEST_FAIL_MATCH: '/bundle.jsonl' }, timeout: 60_000,
    });
    expectSpoolUnavailable(run);
    expect(readdirSync(spools)).toEqual([]);
  });
});

describe('import spool modes', () => {
  it('the spool folder is 0700 and its copy 0600 under any umask (§5.9), even 0277 where mkdtemp made 0500', () => {
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-spool-umask-'));
    const input = join(spools, 'input.jsonl');
    writeFileSync(input, '{}\n');
    const savedTmp = process.env['TMPDIR'];
    const savedUmask = process.umask(0o277);
    const fd = openSync(input, 'r');
    try {
      process.env['TMPDIR'] = spools;
      const spool = new ArtefactSpool(fd);
      try {
        const [name] = readdirSync(spools).filter((entry) => entry.startsWith(`aipcs-bundle-${ownerTag()}-`));
        const folder = join(spools, name ?? 'missing');
        expect((statSync(folder).mode & 0o777).toString(8)).toBe('700');
        expect((statSync(join(folder, 'bundle.jsonl')).mode & 0o777).toString(8)).toBe('600');
      } finally {
        spool.dispose();
      }
    } finally {
      closeSync(fd);
      process.umask(savedUmask);
      if (savedTmp === undefined) delete process.env['TMPDIR'];
      else process.env['TMPDIR'] = savedTmp;
    }
  });
});

describe('import spool passes', () => {
  const text = async (chunks: AsyncIterable<Uint8Array>): Promise<string> => {
    const parts: Buffer[] = [];
    for await (const chunk of chunks) parts.push(Buffer.from(chunk));
    return Buffer.concat(parts).toString('utf8');
  };
  /** A spool over `input` (opened read-only) with TMPDIR set to `spools`; disposed, TMPDIR restored and the input closed after `body`. */
  const onSpool = async (input: string, spools: string, body: (spool: ArtefactSpool) => Promise<void>, observer?: ConstructorParameters<typeof ArtefactSpool>[1]): Promise<void> => {
    const fd = openSync(input, 'r');
    const saved = process.env['TMPDIR'];
    process.env['TMPDIR'] = spools;
    try {
      const spool = new ArtefactSpool(fd, observer);
      try {
        await body(spool);
      } finally {
        spool.dispose();
      }
    } finally {
      if (saved === undefined) delete process.env['TMPDIR'];
      else process.env['TMPDIR'] = saved;
      closeSync(fd);
    }
  };

  it('every pass after the first reads the private copy: an input changed after validation is not what is staged (§5.9), and the copy goes at the end', async () => {
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-spool-passes-'));
    const input = join(mkdtempSync(join(tmpdir(), 'aipcs-spool-passes-input-')), 'input.jsonl');
    writeFileSync(input, 'validated\n');
    const told: string[] = [];
    await onSpool(input, spools, async (spool) => {
      expect(await text(spool.open())).toBe('validated\n');
      // Rewritten in place: the open input now reads the new bytes.
      writeFileSync(input, 'changed after validation\n');
      expect(await text(spool.open())).toBe('validated\n');
      expect(await text(spool.open())).toBe('validated\n');
    }, { pass: (pass) => told.push(`pass ${pass}`), chunk: (bytes) => told.push(`chunk ${bytes}`) });
    expect(told).toEqual(['pass 1', 'chunk 10', 'pass 2', 'chunk 10', 'pass 3', 'chunk 10']);
    expect(readdirSync(spools)).toEqual([]);
  });

  it('a copy that cannot be re-opened for a later pass is storage_unavailable naming TMPDIR, not an internal error', async () => {
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-spool-copy-gone-'));
    const input = join(mkdtempSync(join(tmpdir(), 'aipcs-spool-copy-gone-input-')), 'input.jsonl');
    writeFileSync(input, 'validated\n');
    await onSpool(input, spools, async (spool) => {
      expect(await text(spool.open())).toBe('validated\n');
      // Something emptied the temporary folder between validation and staging.
      const [folder] = readdirSync(spools);
      rmSync(join(spools, folder ?? 'missing', 'bundle.jsonl'));
      const failure = await (async () => text(spool.open()))().then(() => null, (error: unknown) => error);
      expect((failure as { document?: unknown } | null)?.document).toMatchObject({ code: 'storage_unavailable', issues: [{ code: 'spool_unavailable', path: 'TMPDIR' }] });
    });
    expect(readdirSync(spools)).toEqual([]);
  });

  it('an input that cannot be read is storage_unavailable naming --input, not the temporary folder', async () => {
    const spools = mkdtempSync(join(tmpdir(), 'aipcs-spool-unreadable-'));
    // A directory opens read-only, but read(2) fails on it (EISDIR).
    await onSpool(mkdtempSync(join(tmpdir(), 'aipcs-spool-unreadable-input-')), spools, async (spool) => {
      const failure = await text(spool.open()).then(() => null, (error: unknown) => error);
      expect((failure as { document?: unknown } | null)?.document).toMatchObject({ code: 'storage_unavailable', issues: [{ code: 'input_unavailable', path: '--input' }] });
    });
    expect(readdirSync(spools)).toEqual([]);
  });
});
