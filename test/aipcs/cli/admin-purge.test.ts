// `aipcs service purge` through the built CLI: archived-only, with a verified
// export receipt or an explicit override and the exact confirmation; terminal,
// leaving a tombstone (inspect → not_found, exact replays, old operation ids →
// conflict, the id never importable again, the domain name reusable).

import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

describe('aipcs service purge', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let args: string[];
  let work: string;

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    args = rootArgs(dataRoot);
    work = mkdtempSync(join(tmpdir(), 'aipcs-purge-'));
  });

  afterAll(async () => {
    await client.close();
  });

  const purge = (serviceId: string, revision: string, op: string, authority: string[], extra: string[] = []) =>
    aipcs(['service', 'purge', serviceId, '--expected-revision', revision, '--operation-id', op, ...authority, '--confirm-service-id', serviceId, '--yes', ...extra, ...args]);

  it('purges an archived service with a verified export receipt and leaves only a tombstone', async () => {
    const seedKey = '22222222-2222-4222-8222-222222222222';
    const seeded = await client.call('aipcs_service_seed', { domain_name: 'doomed', domain_class: 'knowledge', intent_description: 'Gone soon.', idempotency_key: seedKey });
    const serviceId = seeded.result?.['service_id'] as string;
    await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: `${seedKey}-d` });
    await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: `${seedKey}-m` });
    await createNote(client, serviceId, { title: 'Soon gone' });
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', OP(1), '--yes', ...args]).status).toBe(0);
    const artefact = join(work, 'doomed.jsonl');
    const exported = aipcs(['export', serviceId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
    const receiptId = (exported.envelope.result?.['receipt'] as Record<string, string>)['receipt_id'] as string;
    const store = join(dataRoot, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`);
    expect(existsSync(store)).toBe(true);

    const run = purge(serviceId, '4', OP(3), ['--receipt', receiptId]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.envelope.result).toEqual({
      operation: 'purge',
      operation_id: OP(3),
      tombstone: { service_id: serviceId, purged_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/), authority: 'verified_receipt', receipt_id: receiptId },
    });
    expect(readdirSync(join(dataRoot, 'service-stores')).filter((name) => name.startsWith(`svc_${serviceId.replaceAll('-', '')}`))).toEqual([]);

    const inspect = aipcs(['service', 'inspect', serviceId, ...args]);
    expect([inspect.status, inspect.envelope.error?.code]).toEqual([3, 'not_found']);
    expect((await client.call('aipcs_service_inspect', { service_id: serviceId })).error?.code).toBe('not_found');

    // The exact command replays; earlier commands' operation ids are conflict; a new command is stale.
    expect(purge(serviceId, '4', OP(3), ['--receipt', receiptId]).stdout).toBe(run.stdout);
    const oldArchive = aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', OP(1), '--yes', ...args]);
    expect([oldArchive.status, oldArchive.envelope.error?.code]).toEqual([3, 'conflict']);
    const oldExport = aipcs(['export', serviceId, '--output', join(work, 'again.jsonl'), '--expected-revision', '4', '--operation-id', OP(2), ...args]);
    expect([oldExport.status, oldExport.envelope.error?.code]).toEqual([3, 'conflict']);
    const fresh = aipcs(['service', 'restore', serviceId, '--expected-revision', '4', '--operation-id', OP(4), ...args]);
    expect([fresh.status, fresh.envelope.error?.code]).toEqual([3, 'stale_revision']);
    // The MCP seed key of the purged service is bound for good.
    const reseed = await client.call('aipcs_service_seed', { domain_name: 'doomed', domain_class: 'knowledge', intent_description: 'Gone soon.', idempotency_key: seedKey });
    expect(reseed.error?.code).toBe('conflict');

    // The id can never be imported again here; the domain name is free again.
    const reimport = aipcs(['import', '--input', artefact, '--operation-id', OP(5), '--yes', ...args]);
    expect([reimport.status, reimport.envelope.error?.code]).toEqual([3, 'already_exists']);
    const newSeed = await seedService(client, 'doomed');
    expect(newSeed).not.toBe(serviceId);
  });

  it('purges with an explicit override (a seeded service has no store)', async () => {
    const serviceId = await seedService(client, 'override_me');
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '1', '--operation-id', OP(10), '--yes', ...args]).status).toBe(0);
    const run = purge(serviceId, '2', OP(11), ['--override']);
    expect(run.status).toBe(0);
    expect(run.envelope.result?.['tombstone']).toMatchObject({ authority: 'explicit_override', receipt_id: null });
  });

  it('refuses without the archived state or a matching receipt (unsupported_transition) and on a stale revision', async () => {
    const serviceId = await materialisedService(client, 'kept');
    const active = purge(serviceId, '3', OP(20), ['--override']);
    expect([active.status, active.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
    // A receipt of an export taken while suspended does not authorise a purge.
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(21), ...args]).status).toBe(0);
    const exported = aipcs(['export', serviceId, '--output', join(work, 'kept.jsonl'), '--expected-revision', '4', '--operation-id', OP(22), ...args]);
    const receiptId = (exported.envelope.result?.['receipt'] as Record<string, string>)['receipt_id'] as string;
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '4', '--operation-id', OP(23), '--yes', ...args]).status).toBe(0);
    const suspendedReceipt = purge(serviceId, '5', OP(24), ['--receipt', receiptId]);
    expect([suspendedReceipt.status, suspendedReceipt.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
    const unknownReceipt = purge(serviceId, '5', OP(25), ['--receipt', OP(999)]);
    expect([unknownReceipt.status, unknownReceipt.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
    const stale = purge(serviceId, '4', OP(26), ['--override']);
    expect([stale.status, stale.envelope.error?.code]).toEqual([3, 'stale_revision']);
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result?.['operational_status']).toBe('archived');
    expect(await createNoteFails(serviceId)).toBe('storage_unavailable');
  });

  it("refuses another service's receipt, though both are archived at the same revision (unsupported_transition)", async () => {
    const [first, second] = [await seedService(client, 'receipt_owner'), await seedService(client, 'receipt_borrower')];
    for (const [n, serviceId] of [first, second].entries()) {
      expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '1', '--operation-id', OP(40 + n), '--yes', ...args]).status).toBe(0);
    }
    const exported = aipcs(['export', first, '--output', join(work, 'owner.jsonl'), '--expected-revision', '2', '--operation-id', OP(42), ...args]);
    const receiptId = (exported.envelope.result?.['receipt'] as Record<string, string>)['receipt_id'] as string;
    const borrowed = purge(second, '2', OP(43), ['--receipt', receiptId]);
    expect([borrowed.status, borrowed.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
    expect(aipcs(['service', 'inspect', second, ...args]).envelope.result?.['operational_status']).toBe('archived');
    expect(purge(first, '2', OP(44), ['--receipt', receiptId]).status).toBe(0);
  });

  it('refuses an export receipt taken before a later restore and archive, though its status was archived (unsupported_transition)', async () => {
    const serviceId = await seedService(client, 'receipt_outlived');
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '1', '--operation-id', OP(50), '--yes', ...args]).status).toBe(0);
    const exported = aipcs(['export', serviceId, '--output', join(work, 'outlived.jsonl'), '--expected-revision', '2', '--operation-id', OP(51), ...args]);
    const receiptId = (exported.envelope.result?.['receipt'] as Record<string, string>)['receipt_id'] as string;
    expect(aipcs(['service', 'restore', serviceId, '--expected-revision', '2', '--operation-id', OP(52), ...args]).status).toBe(0);
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', OP(53), '--yes', ...args]).status).toBe(0);
    // The receipt says archived, but at revision 2: it does not cover what the service became at 4.
    const old = purge(serviceId, '4', OP(54), ['--receipt', receiptId]);
    expect([old.status, old.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result?.['operational_status']).toBe('archived');
  });

  it('refuses an import receipt as purge authority, though it names this archived service at this revision (unsupported_transition)', async () => {
    const serviceId = await seedService(client, 'imported_receipt');
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '1', '--operation-id', OP(60), '--yes', ...args]).status).toBe(0);
    const artefact = join(work, 'imported-receipt.jsonl');
    expect(aipcs(['export', serviceId, '--output', artefact, '--expected-revision', '2', '--operation-id', OP(61), ...args]).status).toBe(0);
    const other = freshDataRoot();
    const otherClient = await serveOn(other);
    try {
      const imported = aipcs(['import', '--input', artefact, '--operation-id', OP(62), '--yes', ...rootArgs(other)]);
      expect(imported.status, imported.stderr).toBe(0);
      const db = new Database(join(other, 'registry.sqlite'), { readonly: true });
      const rows = db.prepare(`SELECT receipt_id, receipt_kind FROM aipcs_registry_receipt WHERE service_id = ?`).all(serviceId) as { receipt_id: string; receipt_kind: string }[];
      db.close();
      expect(rows.map((row) => row.receipt_kind)).toEqual(['import']);
      const run = aipcs(['service', 'purge', serviceId, '--expected-revision', '2', '--operation-id', OP(63), '--receipt', rows[0]!.receipt_id, '--confirm-service-id', serviceId, '--yes', ...rootArgs(other)]);
      expect([run.status, run.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
      expect(aipcs(['service', 'inspect', serviceId, ...rootArgs(other)]).envelope.result?.['operational_status']).toBe('archived');
    } finally {
      await otherClient.close();
    }
  });

  async function createNoteFails(serviceId: string): Promise<string | undefined> {
    const created = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'x' }, idempotency_key: `late-${serviceId}` });
    return created.error?.code;
  }

  it('checks the confirmation, the authority and --yes before touching storage', () => {
    const id = OP(30);
    const base = ['service', 'purge', id, '--expected-revision', '2', '--operation-id', OP(31)];
    const cases: [string[], string][] = [
      [[...base, '--override', '--yes'], '--confirm-service-id'],
      [[...base, '--override', '--confirm-service-id', OP(32), '--yes'], '--confirm-service-id'],
      [[...base, '--override', '--confirm-service-id', id], '--yes'],
      [[...base, '--receipt', 'x', '--confirm-service-id', id, '--yes'], '--receipt'],
      // Missing flags are named in the order of spec §1.9.1: revision, operation id, --yes, confirmation
      // (no authority at all is a parser error, operations-walk.test.ts).
      [['service', 'purge', id, '--override', '--yes', '--confirm-service-id', id], '--expected-revision'],
      [['service', 'purge', id, '--expected-revision', '2', '--override', '--yes', '--confirm-service-id', id], '--operation-id'],
      [[...base, '--override', '--confirm-service-id', OP(32)], '--yes'],
    ];
    for (const [argv, path] of cases) {
      const run = aipcs([...argv, ...rootArgs(freshDataRoot())]);
      expect([run.status, run.envelope.error?.code, run.envelope.error?.issues[0]?.path], argv.join(' ')).toEqual([2, 'validation_failed', path]);
    }
    const both = aipcs([...base, '--override', '--receipt', OP(33), '--confirm-service-id', id, '--yes', ...args]);
    expect(both.status).toBe(2);
    expect(both.stdout).toBe('');
    expect(both.stderr).toContain('cannot be used with');
  });
});
