// The built CLI's export writes each record and history line straight into
// the chunk it travels in (covered text encoded there, its digest taken
// over those bytes, the closing brace overwritten with the digest member),
// and renders field sets through key plans it keeps across lines. Its bytes
// must be exactly those of the general writer (canonicalJson of each frame
// object, one Buffer per line), which the codec runs in the test process:
// the artefact is read back and written again that way, and compared. The
// store holds multi-byte text, lines longer than a chunk, updates whose
// history carries two large snapshots, and field sets with different keys.
//
// Also, the checked-aside export (LineChunks + the check thread) on a
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
import { aipcs, createNote, freshDataRoot, key, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { contractByteSize } from '../../../src/aipcs/core/record-rules.js';
import { rewrittenByGeneralWriter } from '../portable/fixtures.js';

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

  /** Updates a note's detail from its first version. */
  async function updateDetail(serviceId: string, recordId: unknown, detail: string): Promise<void> {
    const updated = await client.call('aipcs_record_update', {
      service_id: serviceId,
      entity_name: 'note',
      record_id: recordId,
      expected_record_version: 1,
      updates: { detail },
      idempotency_key: key('update'),
    });
    expect(updated.ok, JSON.stringify(updated.error)).toBe(true);
  }

  /** Suspends the service (operation `op`) and exports it to `name` (operation `op + 1`): the artefact's bytes. */
  function exportSuspended(serviceId: string, name: string, op: number): Buffer {
    const args = rootArgs(dataRoot);
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(op), ...args]).status).toBe(0);
    const artefact = join(work, name);
    const run = aipcs(['export', serviceId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(op + 1), ...args]);
    expect(run.status, run.stderr).toBe(0);
    return readFileSync(artefact);
  }

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
        await updateDetail(serviceId, created['id'], `${'y'.repeat(15_000)}😀`);
      }
    }
    const bytes = exportSuspended(serviceId, 'export.jsonl', 1);
    expect(bytes.length).toBeGreaterThan(250_000);
    // The update's history line holds two snapshots near the record bound: about two chunks long.
    expect(Math.max(...bytes.toString('utf8').split('\n').map((line) => Buffer.byteLength(line)))).toBeGreaterThan(100_000);

    const { readBack, rewritten } = await rewrittenByGeneralWriter(bytes);
    expect(readBack.records).toHaveLength(48);
    expect(readBack.history).toHaveLength(50);
    expect(rewritten.length).toBe(bytes.length);
    expect(rewritten.equals(bytes)).toBe(true);
  });

  it('writes more than 16 chunks and lines longer than 128 KiB exactly as the general writer does', async () => {
    const serviceId = await materialisedService(client, 'large_export');
    for (let i = 0; i < 6; i++) {
      const note = nearBound(i);
      const created = await createNote(client, serviceId, note);
      // Both snapshots of the update near the bound: one history line of about 130 KiB.
      await updateDetail(serviceId, created['id'], 'e'.repeat(16_300));
    }
    const bytes = exportSuspended(serviceId, 'large-export.jsonl', 3);
    // More than MAX_UNCHECKED_CHUNKS chunks of 64 KiB, and a line beyond one 128 KiB buffer.
    expect(bytes.length).toBeGreaterThan(17 * 64 * 1024);
    expect(Math.max(...bytes.toString('utf8').split('\n').map((line) => Buffer.byteLength(line) + 1))).toBeGreaterThan(128 * 1024);

    const { readBack, rewritten } = await rewrittenByGeneralWriter(bytes);
    expect(readBack.records).toHaveLength(6);
    expect(readBack.history).toHaveLength(12);
    expect(rewritten.equals(bytes)).toBe(true);
  }, 120_000);

  it('reserves room for three bytes per code unit when a line of multi-byte text arrives in a part-filled buffer', async () => {
    // Each note's create line (about 60 KB, 20k code units) stays in the
    // buffer, then its update line of two such snapshots (about 120 KB, 40k
    // code units) arrives: bytes that fit the buffer's free room only if
    // counted three to a code unit, not one. The first note's update flushes,
    // so the second note's lines start an empty buffer whatever came before.
    const serviceId = await materialisedService(client, 'multi_byte_lines');
    for (let i = 0; i < 2; i++) {
      const note: Record<string, unknown> = { title: `${i} ${'€'.repeat(5000)}`, detail: '€'.repeat(5400), tags: [] as string[] };
      const tags = note['tags'] as string[];
      while (contractByteSize(completed(note)) < 59_000) tags.push(`${tags.length} ${'€'.repeat(240)}`);
      const created = await createNote(client, serviceId, note);
      await updateDetail(serviceId, created['id'], `${'€'.repeat(5399)}a`);
    }
    const bytes = exportSuspended(serviceId, 'multi-byte.jsonl', 5);
    const history = bytes.toString('utf8').split('\n').filter((line) => line.startsWith('{"kind":"history"'));
    // Create, update, create, update: a create line and the update after it together beyond one 128 KiB buffer, three bytes to most code units.
    const sizes = history.map((line) => Buffer.byteLength(line) + 1);
    expect(sizes[0]).toBeLessThan(65_536);
    expect(sizes[2]).toBeLessThan(65_536);
    expect((sizes[2] as number) + (sizes[3] as number)).toBeGreaterThan(2 * 65_536);
    expect(Buffer.byteLength(history[3] as string)).toBeGreaterThan(2.8 * (history[3] as string).length);

    const { readBack, rewritten } = await rewrittenByGeneralWriter(bytes);
    expect(readBack.history).toHaveLength(4);
    expect(rewritten.equals(bytes)).toBe(true);
  }, 120_000);
});
