// The conformance vector of operations spec §5.8 through the built
// CLI, as a black-box client holding only the spec's bytes would use it:
// dry run on a missing root (exact output, nothing created), import, export
// of the imported service (the service line and its section digest come back
// byte for byte; only the header's time and producer version may differ),
// an import replay, and a one-byte change refused with nothing written.

import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { EMPTY, VECTOR_BYTES, VECTOR_LINES } from './fixtures.js';

const sha = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');
const SERVICE_ID = '11111111-2222-4333-8444-555555555555';
const ROOT = 'dcd5c9e8ceae33873739727e1a235e79aa10822821afe4d695a504cf040689cd';
const SUMMARY = {
  export_format_version: 1,
  source_backend: 'sqlite',
  root_sha256: ROOT,
  frame_count: 3,
  total_byte_count: 1898,
  sections: { header: 1, service: 1, record: 0, history: 0, branch: 0, branch_membership: 0, audit: 0 },
};

describe('the §5.8 conformance vector through aipcs import and export', () => {
  let work: string;
  let vector: string;
  let dataRoot: string;
  let client: AipcsClient;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'aipcs-vector-'));
    vector = join(work, 'vector.jsonl');
    writeFileSync(vector, VECTOR_BYTES, { mode: 0o600 });
    dataRoot = freshDataRoot();
  });

  afterAll(async () => {
    await client?.close();
  });

  it('dry-runs on a missing data root with the exact summary and service, creating nothing', () => {
    const run = aipcs(['import', '--input', vector, '--dry-run', ...rootArgs(dataRoot)]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(
      `${JSON.stringify({
        ok: true,
        result: {
          operation: 'import_dry_run',
          summary: SUMMARY,
          service: {
            service_id: SERVICE_ID,
            domain_name: 'release_notes',
            domain_class: 'knowledge',
            intent_description: 'Example seeded service.',
            design_state: 'seeded',
            operational_status: 'suspended',
            schema_version: null,
            service_revision: 2,
          },
        },
        error: null,
      })}\n`,
    );
    expect(existsSync(dataRoot)).toBe(false);
  });

  it('imports it (identity, revision and status preserved) and replays the same operation id', async () => {
    client = await serveOn(dataRoot);
    const args = ['import', '--input', vector, '--operation-id', '7a000000-0000-4000-8000-000000000001', '--yes', ...rootArgs(dataRoot)];
    const first = aipcs(args);
    expect(first.status, first.stderr).toBe(0);
    const result = first.envelope.result ?? {};
    expect(result['operation']).toBe('import');
    expect(result['summary']).toEqual(SUMMARY);
    const service = result['service'] as Record<string, unknown>;
    expect([service['service_id'], service['service_revision'], service['operational_status'], service['design_state'], service['schema']]).toEqual([SERVICE_ID, 2, 'suspended', 'seeded', null]);
    const replay = aipcs(args);
    expect(replay.status, replay.stderr).toBe(0);
    expect(replay.stdout).toBe(first.stdout);
    // Another operation id for the same identity is a collision.
    const again = aipcs(['import', '--input', vector, '--operation-id', '7a000000-0000-4000-8000-000000000002', '--yes', ...rootArgs(dataRoot)]);
    expect([again.status, again.envelope.error?.code]).toEqual([3, 'already_exists']);
  });

  it('exports the imported service with the vector service line byte for byte', () => {
    const output = join(work, 'again.jsonl');
    const run = aipcs(['export', SERVICE_ID, '--output', output, '--expected-revision', '2', '--operation-id', '7a000000-0000-4000-8000-000000000003', ...rootArgs(dataRoot)]);
    expect(run.status, run.stderr).toBe(0);
    expect(statSync(output).mode & 0o777).toBe(0o600);
    expect(readdirSync(work).filter((name) => name.startsWith('.aipcs-export-'))).toEqual([]);
    const bytes = readFileSync(output);
    const lines = bytes.toString('utf8').split('\n');
    expect(lines.length).toBe(4);
    expect(lines[3]).toBe('');
    const [vectorHeader, vectorService] = VECTOR_LINES as [string, string, string];
    expect(lines[1]).toBe(vectorService);
    // The header differs only where §5.4 lets it: export time and producer version.
    const header = JSON.parse(lines[0] ?? '') as { payload: Record<string, unknown> };
    const expected = JSON.parse(vectorHeader) as { payload: Record<string, unknown> };
    expect({ ...header.payload, created_at: null, producer_package_version: null }).toEqual({ ...expected.payload, created_at: null, producer_package_version: null });
    const receipt = (run.envelope.result?.['receipt'] ?? {}) as Record<string, unknown>;
    expect(header.payload['created_at']).toBe(receipt['created_at']);
    expect([receipt['service_revision'], receipt['operational_status'], receipt['bundle_root_sha256']]).toEqual([2, 'suspended', sha(`${lines[0]}\n${lines[1]}\n`)]);
    const trailer = JSON.parse(lines[2] ?? '') as { ordinal: number; payload: { pre_trailer_byte_count: number; root_sha256: string; sections: { count: number; kind: string; sha256: string }[] } };
    expect(trailer.ordinal).toBe(2);
    expect(trailer.payload.sections.map((s) => [s.kind, s.count, s.sha256])).toEqual([
      ['header', 1, sha(`${lines[0]}\n`)],
      ['service', 1, 'b71fe0e09a517e1411aa6e7b9fbf61a6bd2ce155281de972686cbba5822ea49a'],
      ['record', 0, EMPTY],
      ['history', 0, EMPTY],
      ['branch', 0, EMPTY],
      ['branch_membership', 0, EMPTY],
      ['audit', 0, EMPTY],
    ]);
    expect(run.envelope.result?.['summary']).toMatchObject({ frame_count: 3, total_byte_count: bytes.length, root_sha256: trailer.payload.root_sha256 });
  });

  it('refuses the vector with one byte changed (exit 2, validation_failed) and writes nothing', () => {
    const root = freshDataRoot();
    const damaged = join(work, 'damaged.jsonl');
    writeFileSync(damaged, Buffer.from(VECTOR_BYTES.toString('utf8').replace('"release_notes"', '"release_noted"')), { mode: 0o600 });
    for (const extra of [['--dry-run'], ['--operation-id', '7a000000-0000-4000-8000-000000000004', '--yes']]) {
      const run = aipcs(['import', '--input', damaged, ...extra, ...rootArgs(root)]);
      expect([run.status, run.envelope.error?.code, run.stdout]).toEqual([2, 'validation_failed', '']);
    }
    expect(existsSync(root)).toBe(false);
  });
});
