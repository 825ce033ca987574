// Keeps docs/manifest.md honest: its worked example must validate, evolve as
// the text says, and derive the capabilities the text lists.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../../src/common/json.js';
import { deriveModel, findEntity } from '../../../src/aipcs/contract/manifest/derived-model.js';
import { checkEvolution } from '../../../src/aipcs/contract/manifest/evolve.js';
import { validateManifest } from '../../../src/aipcs/contract/manifest/validate-manifest.js';

const doc = readFileSync(new URL('../../../docs/manifest.md', import.meta.url), 'utf8');

function example(name: string) {
  const match = new RegExp(`<!-- manifest-example: ${name} -->\\n\`\`\`json\\n([\\s\\S]*?)\\n\`\`\``).exec(doc);
  if (!match?.[1]) throw new Error(`example ${name} not found`);
  const result = validateManifest(parseJson(match[1]));
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.manifest;
}

describe('docs/manifest.md worked example', () => {
  const design = example('design');
  const evolved = example('evolve');

  it('derives what the text describes', () => {
    const claim = findEntity(deriveModel(design), 'claim');
    expect(claim?.columns).toHaveLength(13);
    expect(claim?.domainFields).toHaveLength(7);
    expect(claim?.filterableFields.map((field) => [field.name, field.filterMode])).toEqual([
      ['confidence', 'exact'],
      ['source_id', 'exact'],
      ['statement', 'exact'],
      ['status', 'exact'],
      ['superseded_by', 'exact'],
      ['topics', 'membership'],
    ]);
    expect(claim?.maintenance.available).toEqual(['blob_candidate', 'low_confidence', 'missing_authority', 'stale', 'superseded', 'unbranched']);
    expect(findEntity(deriveModel(design), 'source')?.maintenance.available).toEqual(['duplicate_authority', 'missing_authority', 'stale', 'unbranched']);
  });

  it('reports the mistyped field at the path the text shows', () => {
    const match = /<!-- manifest-example: design -->\n```json\n([\s\S]*?)\n```/.exec(doc);
    const broken = (match?.[1] ?? '').replace('"name": "statement", "type": "string"', '"name": "statement", "type": "text"');
    const result = validateManifest(parseJson(broken), { path: ['schema'] });
    expect(result.ok ? [] : result.issues.map((issue) => issue.path)).toEqual(['schema.entities.1.attributes.7.type']);
  });

  it('evolves exactly as the text says', () => {
    const result = checkEvolution(design, evolved);
    if (!result.ok) throw new Error(result.rejection.reason);
    expect(result.plan.addedEntities.map((entity) => entity.name)).toEqual(['claim_note']);
    expect(result.plan.addedFields).toEqual([{ entity: 'claim', field: 'valid_until', type: 'datetime', position: 13 }]);
    expect(result.plan.addedRelationships.map((relationship) => relationship.name)).toEqual(['claim_note_claim_fk']);
    expect(result.plan.addedIndices.map((index) => index.name)).toEqual(['source_title_idx']);
    expect(result.plan.addedUniqueIndicesOnExistingEntities).toEqual([]);
    expect(result.plan.metadataChanges).toEqual([
      { kind: 'allowed_values_expansion', entity: 'source', field: 'kind' },
      { kind: 'retrieval_guidance', entity: null, field: null },
    ]);
    expect(findEntity(deriveModel(evolved), 'claim')?.maintenance.available).toContain('expired');
  });
});
