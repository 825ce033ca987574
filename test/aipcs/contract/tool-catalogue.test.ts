import { describe, expect, it } from 'vitest';
import { stringifyExact } from '../../../src/common/json.js';
import { renderContractJson } from '../../../src/aipcs/contract/envelope.js';
import { ERROR_CODES } from '../../../src/aipcs/contract/error-codes.js';
import { serverInfoResult } from '../../../src/aipcs/contract/server-info.js';
import type { SchemaNode } from '../../../src/aipcs/contract/schema-check.js';
import {
  AIPCS_TOOLS,
  INPUT_SCHEMAS,
  RESULT_MODELS,
  STATELESS_TOOLS,
  TOOL_NAMES,
  toolListing,
} from '../../../src/aipcs/contract/tool-catalogue.js';

describe('tool catalogue', () => {
  it('lists the 21 tools in contract order with their exact descriptions', () => {
    expect(AIPCS_TOOLS.map((tool) => [tool.name, tool.description])).toEqual([
      ['aipcs_server_info', 'Return the public AIPCS MCP capability contract.'],
      ['aipcs_service_seed', 'Create or replay a durable service seed.'],
      ['aipcs_service_list', 'List durable services for the configured principal.'],
      ['aipcs_service_inspect', 'Inspect one durable service projection.'],
      ['aipcs_service_design', 'Validate and store an initial service design.'],
      ['aipcs_service_materialise', 'Materialise a designed service using an exact lifecycle precondition.'],
      ['aipcs_service_evolve', 'Evolve a materialised service with one complete adjacent manifest.'],
      ['aipcs_record_create', 'Create one record in a materialised service.'],
      ['aipcs_record_get', 'Get one record by entity and identifier.'],
      ['aipcs_record_list', 'List records with bounded exact branch scope.'],
      ['aipcs_record_search', 'Search records using declared exact filters.'],
      ['aipcs_record_update', 'Update one record with an exact version precondition.'],
      ['aipcs_record_delete', 'Delete one record with an exact version precondition.'],
      ['aipcs_record_history', 'List bounded record history.'],
      ['aipcs_bootstrap', 'Orient to service topology without reading service stores.'],
      ['aipcs_service_summary', 'Summarise one materialised service with bounded discovery facts.'],
      ['aipcs_branch_create', 'Create one durable memory branch.'],
      ['aipcs_branch_list', 'List direct memory branches with bounded pagination.'],
      ['aipcs_branch_update', 'Update one memory branch with an exact revision precondition.'],
      ['aipcs_branch_assign_records', 'Assign or unassign bounded records from one branch.'],
      ['aipcs_maintenance_scan', 'Return bounded, read-only mechanical maintenance signals.'],
    ]);
    expect(STATELESS_TOOLS.map((tool) => tool.name)).toEqual(['aipcs_server_info']);
  });

  it('gives each listed tool exactly name, description, inputSchema and outputSchema', () => {
    const listing = toolListing();
    expect(listing).toHaveLength(21);
    for (const tool of listing) expect(Object.keys(tool)).toEqual(['name', 'description', 'inputSchema', 'outputSchema']);
    // Plain JSON but for the 2^63−1 bounds, which stay exact bigints for the transport to write.
    const text = stringifyExact(listing);
    expect(text).toContain('"maximum":9223372036854775807');
    expect(text).not.toContain('9223372036854776000');
  });

  it.each([
    ['aipcs_server_info', [], []],
    ['aipcs_service_seed', ['domain_name', 'domain_class', 'intent_description', 'idempotency_key'], ['domain_name', 'domain_class', 'intent_description', 'idempotency_key']],
    ['aipcs_service_list', ['limit'], []],
    ['aipcs_service_inspect', ['service_id'], ['service_id']],
    ['aipcs_service_design', ['service_id', 'schema', 'idempotency_key'], ['service_id', 'schema', 'idempotency_key']],
    ['aipcs_service_materialise', ['service_id', 'expected_service_revision', 'expected_schema_version', 'idempotency_key'], ['service_id', 'expected_service_revision', 'expected_schema_version', 'idempotency_key']],
    ['aipcs_service_evolve', ['service_id', 'expected_service_revision', 'expected_schema_version', 'idempotency_key', 'schema'], ['service_id', 'expected_service_revision', 'expected_schema_version', 'idempotency_key', 'schema']],
    ['aipcs_record_create', ['idempotency_key', 'service_id', 'entity_name', 'record'], ['idempotency_key', 'service_id', 'entity_name', 'record']],
    ['aipcs_record_get', ['service_id', 'entity_name', 'record_id'], ['service_id', 'entity_name', 'record_id']],
    ['aipcs_record_list', ['limit', 'cursor', 'branch_id', 'branch_role', 'service_id', 'entity_name'], ['service_id', 'entity_name']],
    ['aipcs_record_search', ['limit', 'cursor', 'branch_id', 'branch_role', 'service_id', 'entity_name', 'filters'], ['service_id', 'entity_name', 'filters']],
    ['aipcs_record_update', ['idempotency_key', 'service_id', 'entity_name', 'record_id', 'updates', 'expected_record_version'], ['idempotency_key', 'service_id', 'entity_name', 'record_id', 'updates', 'expected_record_version']],
    ['aipcs_record_delete', ['idempotency_key', 'service_id', 'entity_name', 'record_id', 'expected_record_version'], ['idempotency_key', 'service_id', 'entity_name', 'record_id', 'expected_record_version']],
    ['aipcs_record_history', ['limit', 'cursor', 'service_id', 'entity_name', 'record_id'], ['service_id', 'entity_name']],
    ['aipcs_bootstrap', ['limit'], []],
    ['aipcs_service_summary', ['service_id', 'sample'], ['service_id']],
    ['aipcs_branch_create', ['idempotency_key', 'service_id', 'slug', 'title', 'intent', 'branch_type', 'parent_branch_id', 'retrieval_summary'], ['idempotency_key', 'service_id', 'slug', 'title', 'intent']],
    ['aipcs_branch_list', ['limit', 'cursor', 'service_id', 'status', 'branch_type', 'parent_branch_id'], ['service_id']],
    ['aipcs_branch_update', ['idempotency_key', 'service_id', 'branch_id', 'expected_branch_revision', 'updates'], ['idempotency_key', 'service_id', 'branch_id', 'expected_branch_revision', 'updates']],
    ['aipcs_branch_assign_records', ['idempotency_key', 'service_id', 'branch_id', 'role', 'operation', 'records'], ['idempotency_key', 'service_id', 'branch_id', 'role', 'operation', 'records']],
    ['aipcs_maintenance_scan', ['service_id', 'entity_name', 'branch_id', 'scan_types', 'stale_after_days', 'low_confidence_below', 'limit'], ['service_id']],
  ] as const)('%s has the Appendix A properties and required list', (name, properties, required) => {
    const schema = INPUT_SCHEMAS[name];
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties ?? {})).toEqual(properties);
    expect(schema.required).toEqual(required);
  });

  it('closes every nested object except the free-form record, updates and filters maps', () => {
    const open: string[] = [];
    const visit = (node: unknown, path: string): void => {
      if (Array.isArray(node)) node.forEach((item, i) => visit(item, `${path}.${i}`));
      else if (node !== null && typeof node === 'object') {
        const schema = node as SchemaNode;
        if (schema.type === 'object' && schema.additionalProperties !== false) open.push(path);
        for (const [key, value] of Object.entries(node)) visit(value, `${path}.${key}`);
      }
    };
    for (const name of TOOL_NAMES) visit(INPUT_SCHEMAS[name], name);
    expect(open).toEqual([
      'aipcs_record_create.properties.record',
      'aipcs_record_search.properties.filters',
      'aipcs_record_update.properties.updates',
    ]);
  });

  it('publishes the manifest schema with every $def of Appendix A', () => {
    expect(Object.keys(INPUT_SCHEMAS.aipcs_service_design.$defs ?? {}).sort()).toEqual([
      'AttributeDefinition',
      'DiscoveryFacet',
      'EntityDefinition',
      'IndexDefinition',
      'ManifestV2',
      'MigrationHistoryEntry',
      'RelationshipDefinition',
      'RelationshipEndpoint',
    ]);
    expect(INPUT_SCHEMAS.aipcs_service_design.properties?.['schema']).toEqual({ $ref: '#/$defs/ManifestV2' });
    expect(INPUT_SCHEMAS.aipcs_service_design.$defs?.['ManifestV2']?.properties?.['manifest_version']).toEqual({ const: 2 });
  });

  it('wraps each result model as a typed success envelope or the failure envelope, as an object schema', () => {
    for (const tool of AIPCS_TOOLS) {
      const model = RESULT_MODELS[tool.name];
      const output = tool.outputSchema;
      expect(output.type).toBe('object');
      expect(output.anyOf).toEqual([{ $ref: `#/$defs/_TypedSuccessEnvelope_${model}_` }, { $ref: '#/$defs/FailureEnvelope' }]);
      const defs = output.$defs ?? {};
      expect(defs[`_TypedSuccessEnvelope_${model}_`]).toMatchObject({
        title: `_TypedSuccessEnvelope[${model}]`,
        additionalProperties: false,
        required: ['result'],
        properties: { result: { $ref: `#/$defs/${model}` }, error: { type: 'null' } },
      });
      expect(defs['ErrorCode']?.enum).toEqual([...ERROR_CODES]);
      // Every reference resolves inside the tool's own $defs.
      const refs = JSON.stringify(output, (_key, value: unknown) => (typeof value === 'bigint' ? Number(value) : value)).match(/#\/\$defs\/[A-Za-z0-9_]+/g) ?? [];
      for (const ref of refs) expect(defs[ref.slice('#/$defs/'.length)], `${tool.name} ${ref}`).toBeDefined();
    }
  });

  it('uses the result models of contract §9', () => {
    expect(RESULT_MODELS).toMatchObject({
      aipcs_server_info: 'ServerInfo',
      aipcs_service_design: 'ServiceMetadata',
      aipcs_service_list: 'ServiceListResult',
      aipcs_record_create: 'RecordMutationResult',
      aipcs_record_get: 'RecordDocument',
      aipcs_record_search: 'RecordPageResult',
      aipcs_record_delete: 'RecordDeleteResult',
      aipcs_record_history: 'RecordHistoryResult',
      aipcs_bootstrap: 'BootstrapResult',
      aipcs_service_summary: 'ServiceSummaryResult',
      aipcs_branch_update: 'BranchMutationResult',
      aipcs_branch_list: 'BranchPageResult',
      aipcs_branch_assign_records: 'BranchAssignmentResult',
      aipcs_maintenance_scan: 'MaintenanceResult',
    });
  });
});

describe('server info', () => {
  it('renders the ServerInfo result of each profile', () => {
    expect(renderContractJson(serverInfoResult('0.1.1', 'ready'))).toBe(
      '{"server_name":"aipcs","package_version":"0.1.1","aipcs_mcp_contract":"1.2.0","supported_manifest_versions":[2],"transports":["stdio","streamable-http"],' +
        '"features":{"server_info":true,"manifest_v2_validation":true,"legacy_v1_importer":true,"stdio_preflight":true,"registry_lifecycle":true,"materialisation_lifecycle":true,"record_runtime":true,"discovery_topology":true},' +
        '"operational_statuses":["active"]}',
    );
    expect(serverInfoResult('0.1.1', 'stateless')['features']).toMatchObject({ registry_lifecycle: false, materialisation_lifecycle: false, record_runtime: false, discovery_topology: false, server_info: true });
  });
});

describe('catalogue immutability', () => {
  it('freezes every schema node', () => {
    expect(Object.isFrozen(INPUT_SCHEMAS.aipcs_service_design.$defs?.['AttributeDefinition']?.properties)).toBe(true);
    expect(() => {
      (AIPCS_TOOLS[0] as { description: string }).description = 'changed';
    }).toThrow();
  });
});
