// The built CLI checks the lines of a store's export on a second thread (the
// reader's validator on the rendered bytes) while it reads and renders the
// next members. The codec's unit tests run the in-thread check; these pin
// that the command behaves the same with the thread: a good export reads
// back, and a number the artefact cannot carry is refused as before, with
// no file, no claim left and the service still usable.

import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

describe('export with the check thread (built CLI)', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let args: string[];
  let work: string;

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    args = rootArgs(dataRoot);
    work = mkdtempSync(join(tmpdir(), 'aipcs-check-thread-'));
  });

  afterAll(async () => {
    await client.close();
  });

  it('exports a store of many members byte-identically on replay, and the artefact validates', async () => {
    const serviceId = await materialisedService(client, 'threaded');
    for (let i = 0; i < 40; i++) await createNote(client, serviceId, { title: `Note ${i}`, tags: [`t${i % 3}`], confidence: i / 8 });
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
    const first = join(work, 'first.jsonl');
    const again = join(work, 'again.jsonl');
    const run = aipcs(['export', serviceId, '--output', first, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.envelope.result?.['summary']).toMatchObject({ frame_count: 83, sections: { record: 40, history: 40 } });
    // The same operation id replays the receipt's bytes.
    expect(aipcs(['export', serviceId, '--output', again, '--expected-revision', '4', '--operation-id', OP(2), ...args]).status).toBe(0);
    expect(readFileSync(again).equals(readFileSync(first))).toBe(true);
    const dry = aipcs(['import', '--input', first, '--dry-run', ...args]);
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.envelope.result?.['summary']).toEqual(run.envelope.result?.['summary']);
  });

  it('refuses a number the artefact cannot carry without a file or a claim; the service stays usable', async () => {
    const serviceId = await materialisedService(client, 'unwritable');
    await createNote(client, serviceId, { title: 'Fine' });
    await createNote(client, serviceId, { title: 'Large', confidence: 0.5 });
    // A value the contract bounds today but a store may hold (written under
    // another manifest): canonical JSON writes 1e20 as an integer token
    // beyond 64 bits, which no reader accepts.
    const store = new Database(join(dataRoot, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`));
    expect(store.prepare(`UPDATE "note" SET "confidence" = 1e20 WHERE "title" = 'Large'`).run().changes).toBe(1);
    store.close();
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(11), ...args]).status).toBe(0);
    const output = join(work, 'refused.jsonl');
    const refused = aipcs(['export', serviceId, '--output', output, '--expected-revision', '4', '--operation-id', OP(12), ...args]);
    expect([refused.status, refused.envelope.error?.code, refused.envelope.error?.issues[0]?.code, refused.envelope.error?.issues[0]?.path]).toEqual([
      3,
      'unsupported_transition',
      'invalid_value',
      'service',
    ]);
    expect(existsSync(output)).toBe(false);
    const inspect = await client.call('aipcs_service_inspect', { service_id: serviceId });
    expect(inspect.result).toMatchObject({ recovery_state: 'clear', operational_status: 'suspended' });
    expect(aipcs(['service', 'resume', serviceId, '--expected-revision', '4', '--operation-id', OP(13), ...args]).status).toBe(0);
  });
});
