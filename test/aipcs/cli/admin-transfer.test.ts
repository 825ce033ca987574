// SQLite → SQLite transfer through the built CLI: a service with records,
// updates, a delete, branches (with a parent) and memberships is suspended,
// exported, dry-run and imported into a fresh data root; every record,
// history event, branch and membership arrives, and re-exporting the
// imported service gives the same bytes.

import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, createNote, freshDataRoot, key, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

async function page(client: AipcsClient, tool: string, args: Record<string, unknown>, field: string): Promise<unknown[]> {
  const items: unknown[] = [];
  let cursor: string | null = null;
  do {
    const result = await client.call(tool, { ...args, limit: 100, ...(cursor ? { cursor } : {}) });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    items.push(...(result.result?.[field] as unknown[]));
    cursor = (result.result?.['next_cursor'] as string | null) ?? null;
  } while (cursor);
  return items;
}

/** Everything MCP can see of a service's data. */
async function snapshot(client: AipcsClient, serviceId: string) {
  const out: Record<string, unknown> = {};
  for (const entity of ['project', 'note']) {
    out[`${entity}.records`] = await page(client, 'aipcs_record_list', { service_id: serviceId, entity_name: entity }, 'records');
    // The artefact keeps each record's chain, not the service-wide insertion
    // order of events that share a time (a multi-record assignment): compare
    // chains, and check the entity-wide listing runs by time.
    const events = (await page(client, 'aipcs_record_history', { service_id: serviceId, entity_name: entity, record_id: null }, 'events')) as Record<string, string>[];
    const times = events.map((event) => event['occurred_at'] as string);
    expect(times).toEqual([...times].sort());
    out[`${entity}.history`] = [...events].sort((a, b) => (a['id'] as string).localeCompare(b['id'] as string) || Number(a['record_version']) - Number(b['record_version']));
  }
  const branches = (await page(client, 'aipcs_branch_list', { service_id: serviceId }, 'branches')) as Record<string, unknown>[];
  out['branches'] = branches;
  for (const branch of branches) {
    for (const role of ['primary', 'related']) {
      out[`members.${branch['slug'] as string}.${role}`] = await page(
        client,
        'aipcs_record_list',
        { service_id: serviceId, entity_name: 'note', branch_id: branch['id'], branch_role: role },
        'records',
      );
    }
  }
  return out;
}

describe('SQLite to SQLite transfer', () => {
  let source: string;
  let destination: string;
  let sourceClient: AipcsClient;
  let serviceId: string;
  let before: Record<string, unknown>;
  let exportPath: string;

  beforeAll(async () => {
    source = freshDataRoot();
    destination = freshDataRoot();
    sourceClient = await serveOn(source);
    serviceId = await materialisedService(sourceClient, 'transfer');
    const project = await sourceClient.call('aipcs_record_create', { service_id: serviceId, entity_name: 'project', record: { name: 'Apollo', code: 'AP' }, idempotency_key: key('p') });
    const projectId = (project.result?.['record'] as Record<string, unknown>)['id'];
    const notes = [];
    for (let i = 0; i < 12; i++) {
      notes.push(await createNote(sourceClient, serviceId, { title: `Note ${i}`, status: 'draft', confidence: i / 4, priority: i, pinned: i % 2 === 0, tags: [`t${i % 3}`, 'all'], aliases: ['ünï', 'x'], project_id: projectId, due_at: '2030-01-01T00:00:00Z', detail: ' padded ' }));
    }
    const first = notes[0] as Record<string, unknown>;
    await sourceClient.call('aipcs_record_update', { service_id: serviceId, entity_name: 'note', record_id: first['id'], updates: { status: 'complete', confidence: 1 }, expected_record_version: 1, idempotency_key: key('u') });
    const last = notes[11] as Record<string, unknown>;
    await sourceClient.call('aipcs_record_delete', { service_id: serviceId, entity_name: 'note', record_id: last['id'], expected_record_version: 1, idempotency_key: key('d') });
    const parent = await sourceClient.call('aipcs_branch_create', { service_id: serviceId, slug: 'release', title: 'Release', intent: 'Ship it', idempotency_key: key('b') });
    const parentId = (parent.result?.['branch'] as Record<string, unknown>)['id'];
    const child = await sourceClient.call('aipcs_branch_create', { service_id: serviceId, slug: 'release-notes', title: 'Notes', intent: 'Write them', parent_branch_id: parentId, branch_type: 'topic', idempotency_key: key('b') });
    const childId = (child.result?.['branch'] as Record<string, unknown>)['id'];
    const targets = (ids: Record<string, unknown>[], version: number) => ids.map((note) => ({ entity_name: 'note', record_id: note['id'], expected_record_version: version }));
    const assign = await sourceClient.call('aipcs_branch_assign_records', { service_id: serviceId, branch_id: parentId, role: 'primary', operation: 'assign', records: targets(notes.slice(1, 5), 1), idempotency_key: key('a') });
    expect(assign.ok).toBe(true);
    const related = await sourceClient.call('aipcs_branch_assign_records', { service_id: serviceId, branch_id: childId, role: 'related', operation: 'assign', records: targets(notes.slice(2, 4), 2), idempotency_key: key('a') });
    expect(related.ok).toBe(true);
    before = await snapshot(sourceClient, serviceId);
    exportPath = join(dirname(source), 'transfer.aipcs.jsonl');
  });

  afterAll(async () => {
    await sourceClient.close();
  });

  it('moves every record, history event, branch and membership, and re-exports the same bytes', async () => {
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...rootArgs(source)]).status).toBe(0);
    const exported = aipcs(['export', serviceId, '--output', exportPath, '--expected-revision', '4', '--operation-id', OP(2), ...rootArgs(source)]);
    expect(exported.status).toBe(0);
    expect(statSync(exportPath).mode & 0o777).toBe(0o600);
    const summary = exported.envelope.result?.['summary'] as Record<string, unknown>;
    expect(summary['sections']).toEqual({ header: 1, service: 1, record: 12, history: 21, branch: 2, branch_membership: 6, audit: 0 });

    // The destination registry exists only after one serve.
    const destinationClient = await serveOn(destination);
    try {
      const dry = aipcs(['import', '--input', exportPath, '--dry-run', ...rootArgs(destination)]);
      expect(dry.status).toBe(0);
      expect(dry.envelope.result?.['summary']).toEqual(summary);
      const imported = aipcs(['import', '--input', exportPath, '--operation-id', OP(3), '--yes', ...rootArgs(destination)]);
      expect(imported.status, imported.stderr).toBe(0);
      expect(imported.envelope.result).toMatchObject({ operation: 'import', operation_id: OP(3), service: { service_id: serviceId, operational_status: 'suspended', service_revision: 4 } });

      // Exported again from the destination: the same bytes but the header's export time.
      const second = join(dirname(destination), 're-export.jsonl');
      const reexported = aipcs(['export', serviceId, '--output', second, '--expected-revision', '4', '--operation-id', OP(6), ...rootArgs(destination)]);
      expect(reexported.status).toBe(0);
      const linesA = readFileSync(exportPath, 'utf8').split('\n');
      const linesB = readFileSync(second, 'utf8').split('\n');
      expect(linesB.length).toBe(linesA.length);
      expect(linesB.slice(1, -2)).toEqual(linesA.slice(1, -2));
      const header = (line: string | undefined) => JSON.parse(line ?? '{}').payload as Record<string, unknown>;
      expect({ ...header(linesB[0]), created_at: null }).toEqual({ ...header(linesA[0]), created_at: null });
      const sectionsOf = (result: Record<string, unknown> | null) => ((result?.['summary'] as Record<string, unknown>)['sections']);
      expect(sectionsOf(reexported.envelope.result)).toEqual(summary['sections']);

      const resumed = aipcs(['service', 'resume', serviceId, '--expected-revision', '4', '--operation-id', OP(4), ...rootArgs(destination)]);
      expect(resumed.status).toBe(0);
      const after = await snapshot(destinationClient, serviceId);
      expect(after).toEqual(before);
      // Resumed, the imported service takes writes again (its fence reopened at its own generation).
      const created = await createNote(destinationClient, serviceId, { title: 'After the move' });
      const updated = await destinationClient.call('aipcs_record_update', { service_id: serviceId, entity_name: 'note', record_id: created['id'], updates: { status: 'complete' }, expected_record_version: 1, idempotency_key: key('moved') });
      expect([updated.ok, updated.result?.['record']]).toMatchObject([true, { record_version: 2 }]);
    } finally {
      await destinationClient.close();
    }
  });
});
