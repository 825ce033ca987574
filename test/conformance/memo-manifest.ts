// A discovery and maintenance fixture for the conformance suites: one entity
// declaring every conventional authority name the scans look for, plus a
// plain entity declaring none of them.

import type { JsonObject } from '../../src/common/json.js';
import { serverManaged } from '../support/manifests.js';

export function memoManifest(): JsonObject {
  return {
    manifest_version: 2n,
    schema_version: 1n,
    entities: [
      {
        name: 'plain',
        attributes: [...serverManaged(), { name: 'label', type: 'string', required: true }],
      },
      {
        name: 'memo',
        description: 'A remembered fact.',
        attributes: [
          ...serverManaged(),
          { name: 'title', type: 'string', required: true },
          { name: 'body', type: 'string', retrieval_mode: 'annotation' },
          { name: 'status', type: 'string' },
          { name: 'confidence', type: 'number' },
          { name: 'valid_until', type: 'datetime' },
          { name: 'superseded_by', type: 'uuid' },
          { name: 'provenance_source', type: 'string' },
          { name: 'source_ref', type: 'string' },
          { name: 'scope', type: 'string' },
          { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
          { name: 'labels', type: 'string_list' },
          { name: 'pinned', type: 'boolean' },
          { name: 'rank', type: 'integer' },
        ],
      },
    ],
    query_patterns: ['memos by tag', 'memos by status'],
    discovery_facets: [
      { entity: 'plain', field: 'label' },
      { entity: 'memo', field: 'tags' },
      { entity: 'memo', field: 'status' },
      { entity: 'memo', field: 'id' },
      { entity: 'memo', field: 'labels' },
      { entity: 'memo', field: 'pinned' },
      { entity: 'memo', field: 'rank' },
    ],
    retrieval_guidance: 'Search memos by tag first.',
  };
}
