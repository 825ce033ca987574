// The catalog rows our fixed DDL makes, as catalog.ts's signature reads
// them: the registry (registry.ts registryDdl) and the bookkeeping tables
// every store has (service-store.ts bookkeepingDdl and bookkeepingKeysDdl).
// Identical on PostgreSQL 16, 17 and 18. A change to that DDL must change
// these shapes too: test/aipcs/storage/postgres/signature.test.ts builds the
// DDL on each supported major and compares (its failure prints the rows the
// server reported).

import type { CatalogShape } from './catalog.js';

export const REGISTRY_SHAPE: CatalogShape = {
  tables: [
    {
      name: 'aipcs_registry_claim',
      columns: [
        ['principal_id', 'text', true, 'C'],
        ['idempotency_key', 'text', true, 'C'],
        ['operation_kind', 'text', true, 'C'],
        ['fingerprint', 'text', true, 'C'],
        ['service_id', 'text', false, 'C'],
        ['phase', 'text', true, 'C'],
        ['intent_json', 'text', true, 'C'],
        ['result_json', 'text', false, 'C'],
        ['created_at', 'bigint', true, null],
        ['updated_at', 'bigint', true, null],
      ],
      constraints: [
        { name: 'aipcs_registry_claim_phase_check', kind: 'c', columns: ['phase'], check: "CHECK (phase = ANY (ARRAY['prepared'::text, 'completed'::text, 'recovery_required'::text]))" },
        { name: 'aipcs_registry_claim_pkey', kind: 'p', columns: ['principal_id', 'idempotency_key'] },
      ],
      indexes: [
        { name: 'aipcs_registry_claim_active_service', keys: ['service_id'], unique: true, predicate: "phase = ANY (ARRAY['prepared'::text, 'recovery_required'::text])" },
        { name: 'aipcs_registry_claim_pkey', keys: ['principal_id', 'idempotency_key'], unique: true, primary: true },
        { name: 'aipcs_registry_claim_service', keys: ['principal_id', 'service_id'] },
      ],
    },
    {
      name: 'aipcs_registry_identity',
      columns: [
        ['service_id', 'text', true, 'C'],
        ['principal_id', 'text', true, 'C'],
        ['identity_state', 'text', true, 'C'],
        ['domain_name', 'text', false, 'C'],
        ['idempotency_key', 'text', true, 'C'],
        ['lifecycle_at', 'bigint', true, null],
      ],
      constraints: [
        { name: 'aipcs_registry_identity_check', kind: 'c', columns: ['identity_state', 'domain_name'], check: "CHECK ((identity_state = 'import_prepared'::text) = (domain_name IS NOT NULL))" },
        { name: 'aipcs_registry_identity_identity_state_check', kind: 'c', columns: ['identity_state'], check: "CHECK (identity_state = ANY (ARRAY['import_prepared'::text, 'tombstoned'::text]))" },
        { name: 'aipcs_registry_identity_pkey', kind: 'p', columns: ['service_id'] },
      ],
      indexes: [
        { name: 'aipcs_registry_identity_domain', keys: ['principal_id', 'domain_name'], unique: true, predicate: "identity_state = 'import_prepared'::text" },
        { name: 'aipcs_registry_identity_pkey', keys: ['service_id'], unique: true, primary: true },
      ],
    },
    {
      name: 'aipcs_registry_meta',
      columns: [
        ['singleton', 'smallint', true, null],
        ['adapter_id', 'text', true, 'C'],
        ['applied_revision', 'bigint', true, null],
        ['dirty', 'boolean', true, null],
      ],
      constraints: [
        { name: 'aipcs_registry_meta_pkey', kind: 'p', columns: ['singleton'] },
        { name: 'aipcs_registry_meta_singleton_check', kind: 'c', columns: ['singleton'], check: 'CHECK (singleton = 1)' },
      ],
      indexes: [
        { name: 'aipcs_registry_meta_pkey', keys: ['singleton'], unique: true, primary: true },
      ],
    },
    {
      name: 'aipcs_registry_migration',
      columns: [
        ['revision', 'bigint', true, null],
        ['migration_id', 'text', true, 'C'],
        ['applied_at', 'bigint', true, null],
      ],
      constraints: [
        { name: 'aipcs_registry_migration_migration_id_key', kind: 'u', columns: ['migration_id'] },
        { name: 'aipcs_registry_migration_pkey', kind: 'p', columns: ['revision'] },
      ],
      indexes: [
        { name: 'aipcs_registry_migration_migration_id_key', keys: ['migration_id'], unique: true },
        { name: 'aipcs_registry_migration_pkey', keys: ['revision'], unique: true, primary: true },
      ],
    },
    {
      name: 'aipcs_registry_receipt',
      columns: [
        ['receipt_id', 'text', true, 'C'],
        ['principal_id', 'text', true, 'C'],
        ['idempotency_key', 'text', true, 'C'],
        ['service_id', 'text', true, 'C'],
        ['receipt_kind', 'text', true, 'C'],
        ['bundle_root_sha256', 'text', true, 'C'],
        ['export_format_version', 'integer', true, null],
        ['storage_backend', 'text', true, 'C'],
        ['service_revision', 'bigint', true, null],
        ['operational_status', 'text', true, 'C'],
        ['verification', 'text', true, 'C'],
        ['created_at', 'bigint', true, null],
      ],
      constraints: [
        { name: 'aipcs_registry_receipt_export_format_version_check', kind: 'c', columns: ['export_format_version'], check: 'CHECK (export_format_version = 1)' },
        { name: 'aipcs_registry_receipt_operational_status_check', kind: 'c', columns: ['operational_status'], check: "CHECK (operational_status = ANY (ARRAY['active'::text, 'suspended'::text, 'archived'::text]))" },
        { name: 'aipcs_registry_receipt_pkey', kind: 'p', columns: ['receipt_id'] },
        { name: 'aipcs_registry_receipt_receipt_kind_check', kind: 'c', columns: ['receipt_kind'], check: "CHECK (receipt_kind = ANY (ARRAY['export'::text, 'import'::text]))" },
        { name: 'aipcs_registry_receipt_service_revision_check', kind: 'c', columns: ['service_revision'], check: 'CHECK (service_revision >= 1)' },
        { name: 'aipcs_registry_receipt_storage_backend_check', kind: 'c', columns: ['storage_backend'], check: "CHECK (storage_backend = ANY (ARRAY['sqlite'::text, 'postgresql'::text]))" },
        { name: 'aipcs_registry_receipt_verification_check', kind: 'c', columns: ['verification'], check: "CHECK (verification = ANY (ARRAY['unverified'::text, 'verified'::text]))" },
      ],
      indexes: [
        { name: 'aipcs_registry_receipt_pkey', keys: ['receipt_id'], unique: true, primary: true },
        { name: 'aipcs_registry_receipt_service', keys: ['principal_id', 'service_id'] },
      ],
    },
    {
      name: 'aipcs_registry_service',
      columns: [
        ['service_id', 'text', true, 'C'],
        ['principal_id', 'text', true, 'C'],
        ['domain_name', 'text', true, 'C'],
        ['domain_class', 'text', true, 'C'],
        ['intent_description', 'text', true, 'C'],
        ['created_at', 'bigint', true, null],
        ['updated_at', 'bigint', true, null],
        ['last_activity_at', 'bigint', true, null],
        ['manifest_json', 'text', false, 'C'],
        ['schema_version', 'integer', false, null],
        ['design_state', 'text', true, 'C'],
        ['operational_status', 'text', true, 'C'],
        ['service_revision', 'bigint', true, null],
        ['materialised_at', 'bigint', false, null],
        ['storage_backend', 'text', false, 'C'],
        ['storage_namespace', 'text', false, 'C'],
      ],
      constraints: [
        { name: 'aipcs_registry_service_design_state_check', kind: 'c', columns: ['design_state'], check: "CHECK (design_state = ANY (ARRAY['seeded'::text, 'materialised'::text]))" },
        { name: 'aipcs_registry_service_operational_status_check', kind: 'c', columns: ['operational_status'], check: "CHECK (operational_status = ANY (ARRAY['active'::text, 'suspended'::text, 'archived'::text]))" },
        { name: 'aipcs_registry_service_pkey', kind: 'p', columns: ['service_id'] },
        { name: 'aipcs_registry_service_principal_id_domain_name_key', kind: 'u', columns: ['principal_id', 'domain_name'] },
        { name: 'aipcs_registry_service_schema_version_check', kind: 'c', columns: ['schema_version'], check: 'CHECK (schema_version >= 1 AND schema_version <= 65)' },
        { name: 'aipcs_registry_service_service_revision_check', kind: 'c', columns: ['service_revision'], check: 'CHECK (service_revision >= 1)' },
        { name: 'aipcs_registry_service_storage_backend_check', kind: 'c', columns: ['storage_backend'], check: "CHECK (storage_backend = ANY (ARRAY['sqlite'::text, 'postgresql'::text]))" },
        { name: 'aipcs_registry_service_storage_namespace_key', kind: 'u', columns: ['storage_namespace'] },
      ],
      indexes: [
        { name: 'aipcs_registry_service_list', keys: ['principal_id', 'created_at', 'service_id'] },
        { name: 'aipcs_registry_service_pkey', keys: ['service_id'], unique: true, primary: true },
        { name: 'aipcs_registry_service_principal_id_domain_name_key', keys: ['principal_id', 'domain_name'], unique: true },
        { name: 'aipcs_registry_service_storage_namespace_key', keys: ['storage_namespace'], unique: true },
      ],
    },
  ],
  sequences: [],
};

/** The bookkeeping tables of a store, with the sequence of the history's identity column. */
export const FOUNDATION_SHAPE: CatalogShape = {
  tables: [
    {
      name: '__aipcs_list_member',
      columns: [
        ['principal_id', 'text', true, 'C'],
        ['entity_name', 'text', true, 'C'],
        ['field_name', 'text', true, 'C'],
        ['member', 'text', true, 'C'],
        ['record_id', 'text', true, 'C'],
      ],
      constraints: [
        { name: '__aipcs_list_member_pkey', kind: 'p', columns: ['principal_id', 'entity_name', 'field_name', 'member', 'record_id'] },
      ],
      indexes: [
        { name: '__aipcs_list_member_pkey', keys: ['principal_id', 'entity_name', 'field_name', 'member', 'record_id'], unique: true, primary: true },
        { name: '__aipcs_list_member_record', keys: ['record_id'], method: 'hash' },
      ],
    },
    {
      name: '__aipcs_memory_branch',
      columns: [
        ['id', 'text', true, 'C'],
        ['principal_id', 'text', true, 'C'],
        ['slug', 'text', true, 'C'],
        ['title', 'text', true, 'C'],
        ['intent', 'text', true, 'C'],
        ['branch_type', 'text', false, 'C'],
        ['parent_branch_id', 'text', false, 'C'],
        ['status', 'text', true, 'C'],
        ['retrieval_summary', 'text', false, 'C'],
        ['branch_revision', 'bigint', true, null],
        ['created_at', 'bigint', true, null],
        ['updated_at', 'bigint', true, null],
      ],
      constraints: [
        { name: '__aipcs_memory_branch_parent_fk', kind: 'f', columns: ['parent_branch_id'], references: '__aipcs_memory_branch' },
        { name: '__aipcs_memory_branch_pkey', kind: 'p', columns: ['id'] },
        { name: '__aipcs_memory_branch_principal_id_slug_key', kind: 'u', columns: ['principal_id', 'slug'] },
        { name: '__aipcs_memory_branch_status_check', kind: 'c', columns: ['status'], check: "CHECK (status = ANY (ARRAY['active'::text, 'archived'::text, 'superseded'::text]))" },
      ],
      indexes: [
        { name: '__aipcs_memory_branch_list', keys: ['principal_id', 'id'] },
        { name: '__aipcs_memory_branch_parent', keys: ['parent_branch_id', 'principal_id', 'id'] },
        { name: '__aipcs_memory_branch_pkey', keys: ['id'], unique: true, primary: true },
        { name: '__aipcs_memory_branch_principal_id_slug_key', keys: ['principal_id', 'slug'], unique: true },
        { name: '__aipcs_memory_branch_recent', keys: ['principal_id', 'updated_at', 'id'], order: [0, 3, 0] },
        { name: '__aipcs_memory_branch_status', keys: ['principal_id', 'status', 'id'] },
        { name: '__aipcs_memory_branch_type', keys: ['principal_id', 'branch_type', 'id'] },
      ],
    },
    {
      name: '__aipcs_record_branch',
      columns: [
        ['principal_id', 'text', true, 'C'],
        ['entity_name', 'text', true, 'C'],
        ['record_id', 'text', true, 'C'],
        ['branch_id', 'text', true, 'C'],
        ['role', 'text', true, 'C'],
        ['assigned_at', 'bigint', true, null],
      ],
      constraints: [
        { name: '__aipcs_record_branch_branch_fk', kind: 'f', columns: ['branch_id'], references: '__aipcs_memory_branch' },
        { name: '__aipcs_record_branch_pkey', kind: 'p', columns: ['principal_id', 'entity_name', 'record_id', 'branch_id'] },
        { name: '__aipcs_record_branch_role_check', kind: 'c', columns: ['role'], check: "CHECK (role = ANY (ARRAY['primary'::text, 'related'::text]))" },
      ],
      indexes: [
        { name: '__aipcs_record_branch_export', keys: ['principal_id', 'branch_id', 'entity_name', 'record_id', 'role'] },
        { name: '__aipcs_record_branch_one_primary', keys: ['principal_id', 'entity_name', 'record_id'], unique: true, predicate: "role = 'primary'::text" },
        { name: '__aipcs_record_branch_pkey', keys: ['principal_id', 'entity_name', 'record_id', 'branch_id'], unique: true, primary: true },
        { name: '__aipcs_record_branch_scope', keys: ['principal_id', 'branch_id', 'role', 'entity_name', 'record_id'] },
      ],
    },
    {
      name: '__aipcs_record_history',
      columns: [
        ['event_sequence', 'bigint', true, null, 'a'],
        ['principal_id', 'text', true, 'C'],
        ['entity_name', 'text', true, 'C'],
        ['record_id', 'text', true, 'C'],
        ['record_version', 'bigint', true, null],
        ['event_kind', 'text', true, 'C'],
        ['before_json', 'text', false, 'C'],
        ['after_json', 'text', false, 'C'],
        ['occurred_at', 'bigint', true, null],
      ],
      constraints: [
        { name: '__aipcs_record_history_pkey', kind: 'p', columns: ['event_sequence'] },
      ],
      indexes: [
        { name: '__aipcs_record_history_entity', keys: ['principal_id', 'entity_name', 'event_sequence'] },
        { name: '__aipcs_record_history_pkey', keys: ['event_sequence'], unique: true, primary: true },
        { name: '__aipcs_record_history_version', keys: ['principal_id', 'entity_name', 'record_id', 'record_version'] },
      ],
    },
    {
      name: '__aipcs_record_mutation',
      columns: [
        ['principal_id', 'text', true, 'C'],
        ['idempotency_key', 'text', true, 'C'],
        ['operation_kind', 'text', true, 'C'],
        ['fingerprint', 'text', true, 'C'],
        ['result_json', 'text', true, 'C'],
        ['completed_at', 'bigint', true, null],
      ],
      constraints: [
        { name: '__aipcs_record_mutation_pkey', kind: 'p', columns: ['principal_id', 'idempotency_key'] },
      ],
      indexes: [
        { name: '__aipcs_record_mutation_pkey', keys: ['principal_id', 'idempotency_key'], unique: true, primary: true },
      ],
    },
    {
      name: '__aipcs_service_store_meta',
      columns: [
        ['singleton', 'smallint', true, null],
        ['adapter_id', 'text', true, 'C'],
        ['namespace', 'text', true, 'C'],
        ['applied_revision', 'bigint', true, null],
      ],
      constraints: [
        { name: '__aipcs_service_store_meta_pkey', kind: 'p', columns: ['singleton'] },
        { name: '__aipcs_service_store_meta_singleton_check', kind: 'c', columns: ['singleton'], check: 'CHECK (singleton = 1)' },
      ],
      indexes: [
        { name: '__aipcs_service_store_meta_pkey', keys: ['singleton'], unique: true, primary: true },
      ],
    },
    {
      name: '__aipcs_write_fence',
      columns: [
        ['singleton', 'smallint', true, null],
        ['generation', 'bigint', true, null],
        ['state', 'text', true, 'C'],
      ],
      constraints: [
        { name: '__aipcs_write_fence_generation_check', kind: 'c', columns: ['generation'], check: 'CHECK (generation >= 1)' },
        { name: '__aipcs_write_fence_pkey', kind: 'p', columns: ['singleton'] },
        { name: '__aipcs_write_fence_singleton_check', kind: 'c', columns: ['singleton'], check: 'CHECK (singleton = 1)' },
        { name: '__aipcs_write_fence_state_check', kind: 'c', columns: ['state'], check: "CHECK (state = ANY (ARRAY['open'::text, 'closed'::text]))" },
      ],
      indexes: [
        { name: '__aipcs_write_fence_pkey', keys: ['singleton'], unique: true, primary: true },
      ],
    },
  ],
  sequences: ['__aipcs_record_history_event_sequence_seq'],
};
