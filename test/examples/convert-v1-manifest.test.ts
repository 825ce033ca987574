// The seed's one-way legacy manifest-v1 conversion, as a user reaches it:
// examples/convert-v1-manifest.mjs turns a version 1 document into a v2
// manifest that aipcs_service_design accepts (design refuses the v1 document
// itself with legacy_import_required), and refuses what it cannot convert.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs, startAipcs } from '../support/aipcs-client.js';
import { repoRoot } from '../support/bins.js';

const legacy = {
  manifest_version: 1,
  schema_version: 3,
  entities: [{ name: 'note', fields: [{ name: 'title', data_type: 'string', required: true }, { name: 'score', data_type: 'float' }] }],
  migration_history: [],
};

function convert(document: unknown): { status: number | null; stdout: string; stderr: string } {
  const file = join(mkdtempSync(join(tmpdir(), 'aipcs-convert-v1-')), 'legacy.json');
  writeFileSync(file, JSON.stringify(document));
  return spawnSync(process.execPath, [join(repoRoot, 'examples', 'convert-v1-manifest.mjs'), file], { encoding: 'utf8' });
}

describe('examples/convert-v1-manifest.mjs', () => {
  it('turns a v1 manifest into a v2 manifest that design accepts and materialise builds', async () => {
    const run = convert(legacy);
    expect(run.status).toBe(0);
    expect(run.stderr).toContain('warning legacy_type_normalised:');
    const manifest = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(manifest['manifest_version']).toBe(2);
    expect(manifest['schema_version']).toBe(1);

    const server = await startAipcs(sqliteArgs(freshDataRoot()));
    try {
      const seeded = await server.call('aipcs_service_seed', { domain_name: 'legacy_notes', domain_class: 'knowledge', intent_description: 'Notes from a v1 manifest.', idempotency_key: 'seed' });
      const serviceId = seeded.result?.['service_id'] as string;
      const refused = await server.call('aipcs_service_design', { service_id: serviceId, schema: legacy, idempotency_key: 'design-v1' });
      expect(refused.error?.code).toBe('legacy_import_required');
      const designed = await server.call('aipcs_service_design', { service_id: serviceId, schema: manifest, idempotency_key: 'design-v2' });
      expect(designed.ok).toBe(true);
      const materialised = await server.call('aipcs_service_materialise', {
        service_id: serviceId,
        expected_service_revision: designed.result?.['service_revision'],
        expected_schema_version: 1,
        idempotency_key: 'materialise',
      });
      expect(materialised.ok).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('refuses a v1 document with relationships, which has no faithful v2 reading', () => {
    const run = convert({ ...legacy, relationships: [{ from: 'note.id', to: 'note.id' }] });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect((JSON.parse(run.stderr) as { error: { issues: { code: string }[] } }).error.issues[0]?.code).toBe('legacy_relationship_ambiguous');
  });
});
