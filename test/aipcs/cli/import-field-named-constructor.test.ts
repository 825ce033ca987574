// A manifest may name a field `constructor` (a valid identifier), which a
// plain object inherits from Object.prototype. A record of an artefact that
// leaves that field out then read it through the prototype: the import
// admitted a claim, reserved the service id (import_prepared), staged the
// inherited function as the field's value and failed as internal_error (6)
// on every retry; without the field required, dry-run accepted an artefact
// whose record lacked it. An optional field left out is null (spec §5.9).

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/common/json.js';
import { manifestToJson, validateManifest } from '../../../src/aipcs/contract/manifest/validate-manifest.js';
import { encodeHeader, encodeHistory, encodeRecord, encodeService } from '../../../src/aipcs/portable/payload-codec.js';
import { aipcs, freshDataRoot, rootArgs } from '../../support/aipcs-admin.js';
import { serverManaged } from '../../support/manifests.js';
import { HEADER, materialisedService, rawBundle, t } from '../portable/fixtures.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const SERVICE_ID = 'c0000000-0000-4000-8000-00000000000c';
const RECORD_ID = 'd0000000-0000-4000-8000-00000000000d';

/** An artefact of one record whose `constructor` field (required or not) is left out. */
function artefactWithoutConstructor(required: boolean): Buffer {
  const checked = validateManifest({
    manifest_version: 2n,
    schema_version: 1n,
    entities: [{ name: 'thing', attributes: [...serverManaged(), { name: 'title', type: 'string', required: true }, { name: 'constructor', type: 'string', required }] }],
    relationships: [],
    indices: [],
    query_patterns: [],
    discovery_facets: [],
    retrieval_guidance: null,
  });
  if (!checked.ok) throw new Error('the test manifest is invalid');
  const at = t('2026-01-05T00:00:00.000000Z');
  const fields = { title: 'No constructor' };
  const service = materialisedService({ serviceId: SERVICE_ID, domainName: 'things', manifest: manifestToJson(checked.manifest), operationalStatus: 'suspended' });
  const frames: [string, JsonObject][] = [
    ['header', encodeHeader(HEADER)],
    ['service', encodeService(service)],
    ['record', encodeRecord({ entityName: 'thing', recordId: RECORD_ID, recordVersion: 1n, createdAt: at, updatedAt: at, createdVia: 'mcp', fields })],
    ['history', encodeHistory({ entityName: 'thing', recordId: RECORD_ID, recordVersion: 1n, kind: 'create', occurredAt: at, before: null, after: fields })],
  ];
  return rawBundle(frames);
}

/** A data root with a ready registry, and the artefact written beside it. */
function setUp(required: boolean): { args: string[]; input: string; dataRoot: string } {
  const dataRoot = freshDataRoot();
  const args = rootArgs(dataRoot);
  expect(aipcs(['serve', ...args]).status).toBe(0);
  const input = join(mkdtempSync(join(tmpdir(), 'aipcs-constructor-')), 'things.jsonl');
  writeFileSync(input, artefactWithoutConstructor(required));
  return { args, input, dataRoot };
}

function registryRows(dataRoot: string): unknown {
  const db = new Database(join(dataRoot, 'registry.sqlite'), { readonly: true });
  try {
    return ['aipcs_registry_claim', 'aipcs_registry_identity', 'aipcs_registry_service'].map((table) => db.prepare(`SELECT * FROM ${table}`).all());
  } finally {
    db.close();
  }
}

describe('import of a record without its field named constructor', () => {
  it('refuses a required one as validation_failed, dry run or not, with nothing written', () => {
    const { args, input, dataRoot } = setUp(true);
    const before = registryRows(dataRoot);
    const dry = aipcs(['import', '--input', input, '--dry-run', ...args]);
    // Before: the dry run exited 0.
    expect([dry.status, dry.envelope.error?.code]).toEqual([2, 'validation_failed']);
    const run = aipcs(['import', '--input', input, '--operation-id', OP(1), '--yes', ...args]);
    // Before: internal_error (6), the claim left prepared and the id reserved for good.
    expect([run.status, run.envelope.error?.code]).toEqual([2, 'validation_failed']);
    expect(registryRows(dataRoot)).toEqual(before);
  });

  it('imports an optional one as null', () => {
    const { args, input } = setUp(false);
    const run = aipcs(['import', '--input', input, '--operation-id', OP(2), '--yes', ...args]);
    // Before: internal_error (6).
    expect(run.status, run.stderr).toBe(0);
    const output = join(mkdtempSync(join(tmpdir(), 'aipcs-constructor-')), 'again.jsonl');
    const exported = aipcs(['export', SERVICE_ID, '--output', output, '--expected-revision', '7', '--operation-id', OP(3), ...args]);
    expect(exported.status, exported.stderr).toBe(0);
    const record = readFileSync(output, 'utf8').split('\n').find((line) => line.startsWith('{"kind":"record"'));
    expect(record).toContain('"fields":{"constructor":null,"title":"No constructor"}');
  });
});
