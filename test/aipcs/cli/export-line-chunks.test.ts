// The built CLI's export writes each record and history line straight into
// the chunk it travels in (covered text encoded there, its digest taken
// over those bytes, the closing brace overwritten with the digest member),
// and renders field sets through key plans it keeps across lines. Its bytes
// must be exactly those of the general writer (canonicalJson of each frame
// object, one Buffer per line), which the codec runs in the test process:
// the artefact is read back and written again that way, and compared. The
// store holds multi-byte text, lines longer than a chunk, updates whose
// history carries two large snapshots, and field sets with different keys.

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBundleItems } from '../../../src/aipcs/portable/bundle-reader.js';
import { writeBundle } from '../../../src/aipcs/portable/bundle-writer.js';
import type { BundleBranch, BundleHeader, BundleHistoryEvent, BundleMembership, BundleRecord, BundleService } from '../../../src/aipcs/portable/content.js';
import { aipcs, createNote, freshDataRoot, key, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

describe('export lines written into their chunks (built CLI)', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let work: string;

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    work = mkdtempSync(join(tmpdir(), 'aipcs-line-chunks-'));
  });

  afterAll(async () => {
    await client.close();
  });

  it('are the bytes the general writer renders for the same content', async () => {
    const serviceId = await materialisedService(client, 'line_chunks');
    const texts = ['plain', 'é accent', '😀 astral', 'line\u2028separator', '中文 text', 'quote " and \\ slash', 'control \u0001 char', '\u007f delete'];
    for (let i = 0; i < 48; i++) {
      const note: Record<string, unknown> = { title: `${texts[i % texts.length] as string} ${i}` };
      // Field sets with different keys, so the plans kept across lines change.
      if (i % 2 === 0) note['tags'] = [`t${i % 5}`, texts[(i + 3) % texts.length]];
      if (i % 3 === 0) note['confidence'] = i / 7;
      if (i % 4 === 0) note['priority'] = i * 1000;
      if (i % 5 === 0) note['pinned'] = i % 10 === 0;
      // A line near the record bound, longer than a chunk (64 KiB); one of
      // three-byte characters; and lines of many sizes.
      if (i === 7) {
        note['title'] = 'x'.repeat(16_000);
        note['detail'] = 'd'.repeat(16_000);
        note['tags'] = Array.from({ length: 190 }, (_, n) => String(n).padEnd(150, 't'));
      }
      if (i === 21) {
        note['title'] = '€'.repeat(5000);
        note['detail'] = '€'.repeat(5000);
      }
      if (i % 6 === 1 && i !== 7) note['detail'] = `${texts[i % texts.length] as string} `.repeat(40 + i * 20);
      const created = await createNote(client, serviceId, note);
      // An update carries two large snapshots in one history line.
      if (i === 7 || i === 21) {
        const updated = await client.call('aipcs_record_update', {
          service_id: serviceId,
          entity_name: 'note',
          record_id: created['id'],
          expected_record_version: 1,
          updates: { detail: `${'y'.repeat(15_000)}😀` },
          idempotency_key: key('update'),
        });
        expect(updated.ok, JSON.stringify(updated.error)).toBe(true);
      }
    }
    const args = rootArgs(dataRoot);
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
    const artefact = join(work, 'export.jsonl');
    const run = aipcs(['export', serviceId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
    expect(run.status, run.stderr).toBe(0);
    const bytes = readFileSync(artefact);
    expect(bytes.length).toBeGreaterThan(250_000);
    // The update's history line holds two snapshots near the record bound: about two chunks long.
    expect(Math.max(...bytes.toString('utf8').split('\n').map((line) => Buffer.byteLength(line)))).toBeGreaterThan(100_000);

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
    expect(records).toHaveLength(48);
    expect(history).toHaveLength(50);
    const chunks: Buffer[] = [];
    await writeBundle({ header: header as BundleHeader, service: service as BundleService, records, history, branches, memberships }, (chunk) => {
      chunks.push(Buffer.from(chunk));
    });
    const general = Buffer.concat(chunks);
    expect(general.length).toBe(bytes.length);
    expect(general.equals(bytes)).toBe(true);
  });
});
