// A first-session agent learns how to write a manifest from tools/list only
// (the server sends no instructions, contract §2.2, and every error message
// is a fixed text). The ManifestV2 `$defs` therefore describe, at object
// level, what the schema keywords cannot say: the six server-managed fields,
// what makes a field filterable, and what an evolve target must keep. These
// descriptions are non-normative schema text (Appendix A, §2.1); property
// schemas stay exactly as Appendix A gives them.
import { describe, expect, it } from 'vitest';
import { SERVER_MANAGED_FIELDS } from '../../../src/aipcs/contract/manifest/types.js';
import type { SchemaNode } from '../../../src/aipcs/contract/schema-check.js';
import { INPUT_SCHEMAS } from '../../../src/aipcs/contract/tool-catalogue.js';

function propertyDescriptions(node: SchemaNode, path: string, found: string[]): void {
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    if (child.description !== undefined) found.push(`${path}.${name}`);
    propertyDescriptions(child, `${path}.${name}`, found);
  }
  for (const child of node.anyOf ?? []) propertyDescriptions(child, path, found);
  if (node.items) propertyDescriptions(node.items, `${path}[]`, found);
  for (const [name, child] of Object.entries(node.$defs ?? {})) propertyDescriptions(child, `$defs.${name}`, found);
}

describe('manifest guidance in the design and evolve input schemas', () => {
  for (const tool of ['aipcs_service_design', 'aipcs_service_evolve'] as const) {
    const defs = INPUT_SCHEMAS[tool].$defs ?? {};

    it(`${tool}: EntityDefinition names the six server-managed fields exactly as the validator requires`, () => {
      const text = defs['EntityDefinition']?.description ?? '';
      const declared = [...text.matchAll(/([a-z_]+) \(([a-z_]+), required(, primary_key)?\)/g)].map((match) => ({
        name: match[1],
        type: match[2],
        required: true,
        primary_key: match[3] !== undefined,
      }));
      expect(declared).toEqual(SERVER_MANAGED_FIELDS.map((field) => ({ ...field })));
    });

    it(`${tool}: AttributeDefinition and ManifestV2 say what filters and what an evolve keeps`, () => {
      expect(defs['AttributeDefinition']?.description).toMatch(/"annotation".*"membership"/s);
      expect(defs['ManifestV2']?.description).toMatch(/schema_version one higher.*migration_history plus one entry/s);
    });

    it(`${tool}: no property schema gains a description (Appendix A shapes unchanged)`, () => {
      const found: string[] = [];
      propertyDescriptions(INPUT_SCHEMAS[tool], '', found);
      expect(found).toEqual([]);
    });
  }
});
