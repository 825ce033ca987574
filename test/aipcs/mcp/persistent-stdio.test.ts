// End to end over real stdio pipes: `aipcs serve` on SQLite and on every
// PostgreSQL the test setup started, driven by
// the MCP SDK client through the normal flow (seed, design, materialise,
// create, search, update, history) and its refusals.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverProfiles, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

const TOOLS = [
  'aipcs_server_info', 'aipcs_service_seed', 'aipcs_service_list', 'aipcs_service_inspect', 'aipcs_service_design', 'aipcs_service_materialise',
  'aipcs_service_evolve', 'aipcs_record_create', 'aipcs_record_get', 'aipcs_record_list', 'aipcs_record_search', 'aipcs_record_update',
  'aipcs_record_delete', 'aipcs_record_history', 'aipcs_bootstrap', 'aipcs_service_summary', 'aipcs_branch_create', 'aipcs_branch_list',
  'aipcs_branch_update', 'aipcs_branch_assign_records', 'aipcs_maintenance_scan',
];

describe.each(await serverProfiles())('aipcs serve over stdio on $name', (profile) => {
  let aipcs: AipcsClient;
  let drop: () => Promise<void>;
  let secrets: string[];

  beforeAll(async () => {
    const storage = await profile.fresh();
    drop = storage.drop;
    secrets = [...storage.args.filter((arg) => arg.startsWith('/')), ...Object.values(storage.env)];
    aipcs = await startAipcs(storage.args, storage.env);
  });

  afterAll(async () => {
    await aipcs.close();
    await drop();
  });

  it('lists exactly the 21 contract tools in order, each with input and output schemas', async () => {
    const { tools } = await aipcs.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(TOOLS);
    for (const tool of tools) {
      expect(Object.keys(tool).sort()).toEqual(['description', 'inputSchema', 'name', 'outputSchema']);
      expect(tool.inputSchema['additionalProperties']).toBe(false);
      expect(tool.outputSchema?.type).toBe('object');
    }
  });

  it('reports the persistent features', async () => {
    const info = await aipcs.call('aipcs_server_info');
    expect((info.result?.['features'] as Record<string, boolean>)['record_runtime']).toBe(true);
  });

  it('runs the normal flow from seed to history', async () => {
    const seeded = await aipcs.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'knowledge', intent_description: 'Project notes.', idempotency_key: 'seed-1' });
    expect(seeded.ok).toBe(true);
    const serviceId = seeded.result?.['service_id'] as string;
    const designed = await aipcs.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design-1' });
    expect(designed.result).toMatchObject({ service_revision: 2, schema_version: 1, design_state: 'seeded' });
    const materialised = await aipcs.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'mat-1' });
    expect(materialised.result).toMatchObject({ service_revision: 3, design_state: 'materialised' });

    const created = await aipcs.call('aipcs_record_create', {
      service_id: serviceId,
      entity_name: 'note',
      record: { title: 'Release decision', status: 'complete', tags: ['release'], confidence: 1 },
      idempotency_key: 'create-1',
    });
    expect(created.ok).toBe(true);
    const record = created.result?.['record'] as Record<string, unknown>;
    const text = (await aipcs.client.callTool({ name: 'aipcs_record_get', arguments: { service_id: serviceId, entity_name: 'note', record_id: record['id'] } })).content as { text: string }[];
    expect(text[0]?.text).toContain('"confidence":1.0');
    expect(text[0]?.text).not.toContain('owner_id');

    const found = await aipcs.call('aipcs_record_search', { service_id: serviceId, entity_name: 'note', filters: { tags: 'release' } });
    expect((found.result?.['records'] as unknown[]).length).toBe(1);
    const updated = await aipcs.call('aipcs_record_update', { service_id: serviceId, entity_name: 'note', record_id: record['id'], updates: { status: 'draft' }, expected_record_version: 1, idempotency_key: 'update-1' });
    expect((updated.result?.['record'] as Record<string, unknown>)['record_version']).toBe(2);
    const stale = await aipcs.call('aipcs_record_update', { service_id: serviceId, entity_name: 'note', record_id: record['id'], updates: { status: 'draft' }, expected_record_version: 1, idempotency_key: 'update-2' });
    expect(stale.error).toMatchObject({ code: 'stale_record_version', retryable: false, issues: [] });
    const history = await aipcs.call('aipcs_record_history', { service_id: serviceId, entity_name: 'note', record_id: record['id'] });
    expect((history.result?.['events'] as { kind: string }[]).map((event) => event.kind)).toEqual(['create', 'update']);
  });

  it('organises records in branches and orients through bootstrap, summary and maintenance', async () => {
    const serviceId = (await aipcs.call('aipcs_service_seed', { domain_name: 'topics', domain_class: 'knowledge', intent_description: 'Topic notes.', idempotency_key: 'seed-topics' })).result?.['service_id'];
    await aipcs.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design-topics' });
    await aipcs.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'mat-topics' });
    const note = (await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'Branching', status: 'draft' }, idempotency_key: 'note-topics' })).result?.['record'] as Record<string, unknown>;
    const branch = await aipcs.call('aipcs_branch_create', { service_id: serviceId, slug: 'release-plan', title: 'Release plan', intent: 'Everything about the release.', idempotency_key: 'branch-1' });
    expect(branch.result).toMatchObject({ replayed: false, branch: { slug: 'release-plan', status: 'active', branch_revision: 1 } });
    const branchId = (branch.result?.['branch'] as Record<string, unknown>)['id'];
    const assigned = await aipcs.call('aipcs_branch_assign_records', {
      service_id: serviceId, branch_id: branchId, role: 'primary', operation: 'assign', records: [{ entity_name: 'note', record_id: note['id'], expected_record_version: 1 }], idempotency_key: 'assign-1',
    });
    expect(assigned.result).toEqual({ records: [{ entity_name: 'note', id: note['id'], record_version: 2 }], replayed: false });
    const scoped = await aipcs.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note', branch_id: branchId, branch_role: 'primary' });
    expect((scoped.result?.['records'] as unknown[]).length).toBe(1);
    const branches = await aipcs.call('aipcs_branch_list', { service_id: serviceId });
    expect((branches.result?.['branches'] as unknown[]).length).toBe(1);
    const renamed = await aipcs.call('aipcs_branch_update', { service_id: serviceId, branch_id: branchId, expected_branch_revision: 1, updates: { title: 'Release 2.0' }, idempotency_key: 'rename-1' });
    expect((renamed.result?.['branch'] as Record<string, unknown>)['branch_revision']).toBe(2);
    const bootstrap = await aipcs.call('aipcs_bootstrap');
    expect(JSON.stringify(bootstrap.result)).not.toContain('Branching');
    const summary = await aipcs.call('aipcs_service_summary', { service_id: serviceId, sample: 1 });
    expect(summary.ok).toBe(true);
    const scan = await aipcs.call('aipcs_maintenance_scan', { service_id: serviceId });
    expect(scan.ok).toBe(true);
    expect(JSON.stringify(scan.result)).not.toContain('Branching');
  });

  it('reports request-shape problems with issues and semantic ones without', async () => {
    const shape = await aipcs.call('aipcs_service_seed', { domain_name: 'Bad Name', domain_class: 'k', intent_description: 'i', idempotency_key: 'k', extra: 1 });
    expect(shape.error?.code).toBe('validation_failed');
    expect(shape.error?.issues.map((issue) => [issue.code, issue.path])).toEqual([
      ['invalid_value', 'domain_name'],
      ['unknown_field', 'extra'],
    ]);
    const list = await aipcs.call('aipcs_service_list', { limit: 101 });
    expect(list.error?.issues[0]).toMatchObject({ code: 'invalid_value', path: 'limit' });
    const unknownService = await aipcs.call('aipcs_record_get', { service_id: '11111111-1111-4111-8111-111111111111', entity_name: 'note', record_id: '11111111-1111-4111-8111-111111111111' });
    expect(unknownService.error).toMatchObject({ code: 'not_found', message: 'The requested record or branch was not found.', issues: [] });
  });

  it('refuses U+0000 in free-text arguments alike on every backend, and stores nothing', async () => {
    const seed = await aipcs.call('aipcs_service_seed', { domain_name: 'nul_probe', domain_class: 'k\u0000', intent_description: 'i', idempotency_key: 'nul-seed' });
    expect(seed.error).toMatchObject({ code: 'validation_failed', issues: [{ code: 'invalid_value', path: 'domain_class' }] });
    const keyed = await aipcs.call('aipcs_service_seed', { domain_name: 'nul_probe', domain_class: 'k', intent_description: 'i', idempotency_key: 'nul\u0000seed' });
    expect(keyed.error).toMatchObject({ code: 'validation_failed', issues: [{ code: 'invalid_value', path: 'idempotency_key' }] });
    const list = await aipcs.call('aipcs_service_list', {});
    expect(JSON.stringify(list.result)).not.toContain('nul_probe');
    const seeded = await aipcs.call('aipcs_service_seed', { domain_name: 'nul_probe', domain_class: 'k', intent_description: 'i', idempotency_key: 'nul-ok' });
    const serviceId = seeded.result?.['service_id'] as string;
    await aipcs.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'nul-design' });
    const materialised = await aipcs.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'nul-mat' });
    expect(materialised.ok).toBe(true);
    const branch = await aipcs.call('aipcs_branch_create', { service_id: serviceId, slug: 'nul-probe', title: 't\u0000', intent: 'i', idempotency_key: 'nul-branch' });
    expect(branch.error).toMatchObject({ code: 'validation_failed', issues: [{ code: 'invalid_value', path: 'title' }] });
    const record = await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'n' }, idempotency_key: 'nul\u0000record' });
    expect(record.error).toMatchObject({ code: 'validation_failed', issues: [{ code: 'invalid_value', path: 'idempotency_key' }] });
  });

  it('never leaks the principal, paths or the DSN into stderr', () => {
    expect(aipcs.stderr()).not.toContain('local-agent');
    for (const secret of secrets) expect(aipcs.stderr()).not.toContain(secret);
  });
});
