// A tool call that storage fails answers the contract's bare envelope
// (`storage_unavailable`, no issues) and leaves the operator one line on
// stderr saying why, in fixed words (operations spec §2.9: no path, SQL or
// driver text). Before, nothing was logged: an agent on a full disk got
// "Storage is unavailable." and the server's log said nothing at all.
// Refusals the client acts on (a stale version) are not logged.

import { copyFileSync, readdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freshDataRoot, materialisedService, materialisedServiceThenStop, serveOn, createNote } from '../../support/aipcs-admin.js';
import { sqliteArgs, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';

const servers: AipcsClient[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const UNAVAILABLE = { code: 'storage_unavailable', message: 'Storage is unavailable.', issues: [], retryable: false };

describe('a storage failure while serving', () => {
  it('is logged with its reason; the client sees the contract envelope', async () => {
    const dataRoot = freshDataRoot();
    const serviceId = await materialisedServiceThenStop(dataRoot, 'full_disk');
    // 400 blocks (200 or 400 KiB): the registry and a fresh store fit, a few notes of 15 KB each do not.
    const server = await startAipcs(sqliteArgs(dataRoot), {}, { fileSizeBlocks: 400 });
    servers.push(server);
    let failed;
    const created: string[] = [];
    for (let i = 0; i < 100 && failed === undefined; i++) {
      const envelope = await server.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: `note ${i}`, detail: 'x'.repeat(15_000) }, idempotency_key: `create-${i}` });
      if (envelope.ok) created.push((envelope.result?.['record'] as { id: string }).id);
      else failed = envelope;
    }
    expect(failed?.error).toEqual(UNAVAILABLE);
    // SQLite reports a refused write as an I/O error (the limit's EFBIG; a full disk's ENOSPC says "full").
    // stderr is another pipe: its line may reach this process after the answer.
    await expect.poll(() => server.stderr()).toBe('aipcs warn: aipcs_record_create: storage unavailable: the file system failed a read or write\n');
    expect(server.stderr()).not.toContain(dirname(dataRoot));
    // What was acknowledged is still there.
    const listed = await server.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note', limit: 100 });
    expect((listed.result?.['records'] as { id: string }[]).map((record) => record.id).sort()).toEqual([...created].sort());
  });

  it('names a database file replaced under the server, and does not log refusals', async () => {
    const dataRoot = freshDataRoot();
    const server = await serveOn(dataRoot);
    servers.push(server);
    const serviceId = await materialisedService(server, 'replaced');
    const note = await createNote(server, serviceId, { title: 'kept' });
    const stale = await server.call('aipcs_record_update', { service_id: serviceId, entity_name: 'note', record_id: note['id'], updates: { title: 'late' }, expected_record_version: 9, idempotency_key: 'stale' });
    expect(stale.error?.code).toBe('stale_record_version');
    expect(server.stderr()).toBe('');

    const stores = join(dataRoot, 'service-stores');
    const [database] = readdirSync(stores).filter((name) => name.endsWith('.sqlite'));
    copyFileSync(join(stores, database!), join(stores, 'copy'));
    renameSync(join(stores, 'copy'), join(stores, database!));
    const refused = await server.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'lost?' }, idempotency_key: 'after-replace' });
    expect(refused.error).toEqual(UNAVAILABLE);
    await expect.poll(() => server.stderr()).toBe('aipcs warn: aipcs_record_create: storage unavailable: a database file was removed or replaced while in use\n');
  });
});
