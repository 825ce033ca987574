// Crash safety of durable lifecycle intent (session 6 audit): a process
// killed with SIGKILL while SQLite switches a new database to WAL leaves the
// file with a WAL header beside SQLite's own hot rollback journal. That state
// must not lock the data root or the service for good: the next start, or the
// same materialise key, recovers it (SQLite rolls the journal back to an empty
// file) and converges on one result (D26).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { freshDataRoot, sqliteArgs, startAipcs } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

const materialise = (serviceId: string) => ({ service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'mat' });
const storePath = (root: string, serviceId: string) => join(root, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`);

/**
 * The files a kill leaves between SQLite writing the WAL header of a new,
 * empty database and unlinking its journal: a one-page WAL-mode file and the
 * 512-byte hot journal SQLite wrote before it (magic, no page records, an
 * original size of zero pages, 512-byte sectors, 4096-byte pages).
 */
function leaveInterruptedWalSwitch(path: string): void {
  closeSync(openSync(path, 'wx', 0o600));
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.close();
  writeJournalOfEmptyDatabase(path);
}

function writeJournalOfEmptyDatabase(path: string): void {
  const header = Buffer.alloc(512);
  Buffer.from([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]).copy(header, 0);
  header.writeUInt32BE(0, 8);
  header.writeUInt32BE(0x9af39eb5, 12);
  header.writeUInt32BE(0, 16);
  header.writeUInt32BE(512, 20);
  header.writeUInt32BE(4096, 24);
  writeFileSync(`${path}-journal`, header, { mode: 0o600, flag: 'wx' });
}

async function seededAndDesigned(root: string): Promise<string> {
  const setup = await startAipcs(sqliteArgs(root));
  try {
    const serviceId = (await setup.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'k', intent_description: 'i', idempotency_key: 'seed' })).result?.['service_id'] as string;
    await setup.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design' });
    return serviceId;
  } finally {
    await setup.close();
  }
}

const hasStrace = spawnSync('strace', ['-V']).status === 0;

/** `aipcs serve` under strace, SIGKILLed by the kernel at its first unlink of `path`. */
async function serveKilledAtUnlink(root: string, path: string): Promise<Client> {
  const client = new Client({ name: 'crash-test', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: 'strace',
    args: ['-f', '-qq', '-o', '/dev/null', '-P', path, '-e', 'trace=unlink', '-e', 'inject=unlink:signal=KILL', process.execPath, aipcsBin(), 'serve', ...sqliteArgs(root)],
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
    stderr: 'pipe',
  });
  await client.connect(transport);
  return client;
}

describe('a SQLite database left mid-way through its switch to WAL (SIGKILL)', () => {
  it('a new data root whose first serve died there starts on the next serve', async () => {
    const root = freshDataRoot();
    mkdirSync(root, { mode: 0o700 });
    leaveInterruptedWalSwitch(join(root, 'registry.sqlite'));
    const next = await startAipcs(sqliteArgs(root));
    try {
      const seeded = await next.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'k', intent_description: 'i', idempotency_key: 'seed' });
      expect(seeded.ok).toBe(true);
      expect(existsSync(join(root, 'registry.sqlite-journal'))).toBe(false);
    } finally {
      await next.close();
    }
  });

  it('a materialise killed while creating the store converges when the same key is retried', async () => {
    const root = freshDataRoot();
    const serviceId = await seededAndDesigned(root);
    // Killed by the real SIGKILL once the intent is durable, then the store file as the WAL switch leaves it.
    const doomed = await startAipcs(sqliteArgs(root), { AIPCS_FAULT_INJECTION: 'materialise:admitted' });
    await expect(doomed.call('aipcs_service_materialise', materialise(serviceId))).rejects.toThrow();
    await doomed.close().catch(() => undefined);
    mkdirSync(join(root, 'service-stores'), { mode: 0o700, recursive: true });
    leaveInterruptedWalSwitch(storePath(root, serviceId));

    const next = await startAipcs(sqliteArgs(root));
    let keptId = '';
    try {
      const retried = await next.call('aipcs_service_materialise', materialise(serviceId));
      expect(retried.error).toBeNull();
      expect(retried.result).toMatchObject({ design_state: 'materialised', service_revision: 3, recovery_state: 'clear' });
      const replayed = await next.call('aipcs_service_materialise', materialise(serviceId));
      expect(replayed.result).toEqual(retried.result);
      const created = await next.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'kept' }, idempotency_key: 'c' });
      keptId = (created.result?.['record'] as { id: string }).id;
    } finally {
      await next.close();
    }

    // The same journal beside a store with content is not an interrupted
    // switch: refused, never rolled back (which would empty the store).
    writeJournalOfEmptyDatabase(storePath(root, serviceId));
    const refused = await startAipcs(sqliteArgs(root));
    try {
      const listed = await refused.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
      expect(listed.error?.code).toBe('storage_unavailable');
    } finally {
      await refused.close();
    }
    unlinkSync(`${storePath(root, serviceId)}-journal`);
    const after = await startAipcs(sqliteArgs(root));
    try {
      const listed = await after.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
      expect((listed.result?.['records'] as { id: string }[]).map((record) => record.id)).toEqual([keptId]);
    } finally {
      await after.close();
    }
  });

  it.runIf(hasStrace)('the real kill (strace fault injection at the journal unlink) of a first serve and of a materialise both recover', async () => {
    const root = freshDataRoot();
    const first = await serveKilledAtUnlink(root, join(root, 'registry.sqlite-journal')).catch(() => null);
    await first?.close().catch(() => undefined);
    expect(existsSync(join(root, 'registry.sqlite-journal'))).toBe(true);

    const serviceId = await seededAndDesigned(root);
    const store = storePath(root, serviceId);
    const doomed = await serveKilledAtUnlink(root, `${store}-journal`);
    await expect(doomed.callTool({ name: 'aipcs_service_materialise', arguments: materialise(serviceId) }, CallToolResultSchema, { timeout: 60_000 })).rejects.toThrow();
    await doomed.close().catch(() => undefined);
    expect(existsSync(`${store}-journal`)).toBe(true);

    const next = await startAipcs(sqliteArgs(root));
    try {
      const retried = await next.call('aipcs_service_materialise', materialise(serviceId));
      expect(retried.result).toMatchObject({ design_state: 'materialised', service_revision: 3, recovery_state: 'clear' });
    } finally {
      await next.close();
    }
  });
});
