// The built CLI's checked-aside export (LineChunks + the check thread) on a
// store larger than its bounded pipeline: more than MAX_UNCHECKED_CHUNKS (16)
// chunks of 64 KiB, so the writer must wait for the thread's acks and reuse
// its slots, and history lines longer than one LineChunks buffer (128 KiB,
// an update whose two snapshots are both near the 64 KiB record bound), so
// the buffer must grow and the chunk travels outside the shared slots. The
// artefact must read back and be byte-identical to the general writer's.

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBundleItems } from '../../../src/aipcs/portable/bundle-reader.js';
import { writeBundle } from '../../../src/aipcs/portable/bundle-writer.js';
import type { BundleBranch, BundleHeader, BundleHistoryEvent, BundleMembership, BundleRecord, BundleService } from '../../../src/aipcs/portable/content.js';
import { contractByteSize } from '../../../src/aipcs/core/record-rules.js';
import { aipcs, createNote, freshDataRoot, key, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

/** The complete field set the store keeps for a note (every domain attribute, null when absent). */
function completed(note: Record<string, unknown>): Record<string, unknown> {
  const names = ['title', 'detail', 'status', 'confidence', 'priority', 'pinned', 'due_at', 'tags', 'aliases', 'project_id'];
  return Object.fromEntries(names.map((name) => [name, note[name] ?? null]));
}

/** A note whose field set is just under the 64 KiB record bound. */
function nearBound(i: number): Record<string, unknown> {
  const note: Record<string, unknown> = { title: `${i} ${'x'.repeat(16_000)}`, detail: 'd'.repeat(16_300), tags: [] as string[] };
  const tags = note['tags'] as string[];
  for (let n = 0; ; n++) {
    const tag = `${n}-${'t'.repeat(240)}`;
    tags.push(tag);
    if (contractByteSize(completed(note)) > 65_536 - 40) {
      tags.pop();
      break;
    }
  }
  return note;
}

describe('export through the check thread beyond its bounded pipeline (built CLI)', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let work: string;

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    work = mkdtempSync(join(tmpdir(), 'aipcs-large-export-'));
  });

  afterAll(async () => {
    await client.close();
  });

  it('writes more than 16 chunks and lines longer than 128 KiB exactly as the general writer does', async () => {
    const serviceId = await materialisedService(client, 'large_export');
    for (let i = 0; i < 6; i++) {
      const note = nearBound(i);
      const created = await createNote(client, serviceId, note);
      // Both snapshots of the update near the bound: one history line of about 130 KiB.
      const updated = await client.call('aipcs_record_update', {
        service_id: serviceId,
        entity_name: 'note',
        record_id: created['id'],
        expected_record_version: 1,
        updates: { detail: 'e'.repeat(16_300) },
        idempotency_key: key('update'),
      });
      expect(updated.ok, JSON.stringify(updated.error)).toBe(true);
    }
    const args = rootArgs(dataRoot);
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
    const artefact = join(work, 'export.jsonl');
    const run = aipcs(['export', serviceId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
    expect(run.status, run.stderr).toBe(0);
    const bytes = readFileSync(artefact);
    // More than MAX_UNCHECKED_CHUNKS chunks of 64 KiB, and a line beyond one 128 KiB buffer.
    expect(bytes.length).toBeGreaterThan(17 * 64 * 1024);
    expect(Math.max(...bytes.toString('utf8').split('\n').map((line) => Buffer.byteLength(line) + 1))).toBeGreaterThan(128 * 1024);

    let header: BundleHeader | null = null;
    let service: BundleService | null = null;
    const records: BundleRecord[] = [];
    const history: BundleHistoryEvent[] = [];
    const branches: BundleBranch[] = [];
    const memberships: BundleMembership[] = [];
    async function* source(): AsyncGenerator<Uint8Array> {
      yield bytes;
    }
    for await (const item of readBundleItems(source())) {
      if (item.kind === 'header') header = item.value;
      else if (item.kind === 'service') service = item.value;
      else if (item.kind === 'record') records.push(item.value);
      else if (item.kind === 'history') history.push(item.value);
      else if (item.kind === 'branch') branches.push(item.value);
      else if (item.kind === 'branch_membership') memberships.push(item.value);
    }
    expect(records).toHaveLength(6);
    expect(history).toHaveLength(12);
    const chunks: Buffer[] = [];
    await writeBundle({ header: header as BundleHeader, service: service as BundleService, records, history, branches, memberships }, (chunk) => {
      chunks.push(Buffer.from(chunk));
    });
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
  }, 120_000);
});
