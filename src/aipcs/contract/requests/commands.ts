// Typed commands: what each tool's arguments mean once they passed request-
// shape validation (trimmed, defaults applied, UUIDs canonical, integers
// exact). Handlers trust these types; semantic checks against a service's
// manifest (entity exists, field types, allowed values) happen in the core.

import type { JsonObject, JsonValue } from '../../../common/json.js';
import type { MaintenanceScanType } from '../manifest/derived-model.js';
import type { ManifestV2 } from '../manifest/types.js';

export type BranchRole = 'primary' | 'related';
export type BranchStatus = 'active' | 'archived' | 'superseded';

export interface ServerInfoCommand {
  readonly tool: 'aipcs_server_info';
}

export interface ServiceSeedCommand {
  readonly tool: 'aipcs_service_seed';
  readonly domainName: string;
  readonly domainClass: string;
  readonly intentDescription: string;
  readonly idempotencyKey: string;
}

export interface ServiceListCommand {
  readonly tool: 'aipcs_service_list';
  readonly limit: number;
}

export interface ServiceInspectCommand {
  readonly tool: 'aipcs_service_inspect';
  readonly serviceId: string;
}

export interface ServiceDesignCommand {
  readonly tool: 'aipcs_service_design';
  readonly serviceId: string;
  /** Validated and normalised; `manifestToJson` gives the stored and fingerprinted form. */
  readonly manifest: ManifestV2;
  readonly idempotencyKey: string;
}

export interface ServiceMaterialiseCommand {
  readonly tool: 'aipcs_service_materialise';
  readonly serviceId: string;
  readonly expectedServiceRevision: bigint;
  readonly expectedSchemaVersion: number;
  readonly idempotencyKey: string;
}

export interface ServiceEvolveCommand {
  readonly tool: 'aipcs_service_evolve';
  readonly serviceId: string;
  readonly expectedServiceRevision: bigint;
  readonly expectedSchemaVersion: number;
  readonly idempotencyKey: string;
  /** The complete target; `schema_version` is `expectedSchemaVersion + 1`. */
  readonly manifest: ManifestV2;
}

/** A scalar record value or a string list, exactly as sent (1 vs 1.0 kept). */
export type RecordValue = JsonValue;

export interface RecordCreateCommand {
  readonly tool: 'aipcs_record_create';
  readonly serviceId: string;
  readonly entityName: string;
  /** Domain values with trimmed keys; values untrimmed and unconverted. */
  readonly record: JsonObject;
  readonly idempotencyKey: string;
}

export interface RecordGetCommand {
  readonly tool: 'aipcs_record_get';
  readonly serviceId: string;
  readonly entityName: string;
  readonly recordId: string;
}

export interface BranchScope {
  readonly branchId: string;
  readonly role: BranchRole;
}

export interface PageRequest {
  readonly limit: number;
  /** Opaque, 1..1024 characters; its alphabet, decoding and binding are the core's (a bad cursor is a semantic failure, contract §3.3). */
  readonly cursor: string | null;
}

export interface RecordListCommand {
  readonly tool: 'aipcs_record_list';
  readonly serviceId: string;
  readonly entityName: string;
  readonly page: PageRequest;
  readonly branchScope: BranchScope | null;
}

export interface RecordSearchCommand {
  readonly tool: 'aipcs_record_search';
  readonly serviceId: string;
  readonly entityName: string;
  readonly page: PageRequest;
  readonly branchScope: BranchScope | null;
  /** 1..16 filters, trimmed identifier keys, scalar values as sent. */
  readonly filters: JsonObject;
}

export interface RecordUpdateCommand {
  readonly tool: 'aipcs_record_update';
  readonly serviceId: string;
  readonly entityName: string;
  readonly recordId: string;
  readonly updates: JsonObject;
  readonly expectedRecordVersion: bigint;
  readonly idempotencyKey: string;
}

export interface RecordDeleteCommand {
  readonly tool: 'aipcs_record_delete';
  readonly serviceId: string;
  readonly entityName: string;
  readonly recordId: string;
  readonly expectedRecordVersion: bigint;
  readonly idempotencyKey: string;
}

export interface RecordHistoryCommand {
  readonly tool: 'aipcs_record_history';
  readonly serviceId: string;
  readonly entityName: string;
  readonly recordId: string | null;
  readonly page: PageRequest;
}

export interface BootstrapCommand {
  readonly tool: 'aipcs_bootstrap';
  readonly limit: number;
}

export interface ServiceSummaryCommand {
  readonly tool: 'aipcs_service_summary';
  readonly serviceId: string;
  readonly sample: number;
}

export interface BranchCreateCommand {
  readonly tool: 'aipcs_branch_create';
  readonly serviceId: string;
  readonly slug: string;
  readonly title: string;
  readonly intent: string;
  readonly branchType: string | null;
  readonly parentBranchId: string | null;
  readonly retrievalSummary: string | null;
  readonly idempotencyKey: string;
}

export interface BranchListCommand {
  readonly tool: 'aipcs_branch_list';
  readonly serviceId: string;
  readonly status: BranchStatus | null;
  readonly branchType: string | null;
  readonly parentBranchId: string | null;
  readonly page: PageRequest;
}

/** Only the supplied keys are present; `null` clears where the contract allows it. */
export interface BranchUpdates {
  readonly title?: string;
  readonly intent?: string;
  readonly branchType?: string | null;
  readonly parentBranchId?: string | null;
  readonly status?: BranchStatus;
  readonly retrievalSummary?: string | null;
}

export interface BranchUpdateCommand {
  readonly tool: 'aipcs_branch_update';
  readonly serviceId: string;
  readonly branchId: string;
  readonly expectedBranchRevision: bigint;
  readonly updates: BranchUpdates;
  /** The supplied `updates` as a JSON object (trimmed): the fingerprint input, absent ≠ null. */
  readonly suppliedUpdates: JsonObject;
  readonly idempotencyKey: string;
}

export interface BranchAssignmentTarget {
  readonly entityName: string;
  readonly recordId: string;
  readonly expectedRecordVersion: bigint;
}

export interface BranchAssignCommand {
  readonly tool: 'aipcs_branch_assign_records';
  readonly serviceId: string;
  readonly branchId: string;
  readonly role: BranchRole;
  readonly operation: 'assign' | 'unassign';
  /** In request order, no duplicate (entity, record). */
  readonly records: readonly BranchAssignmentTarget[];
  readonly idempotencyKey: string;
}

export interface MaintenanceScanCommand {
  readonly tool: 'aipcs_maintenance_scan';
  readonly serviceId: string;
  readonly entityName: string | null;
  readonly branchId: string | null;
  /** The requested types (distinct); all eight in enum order when omitted or null. */
  readonly scanTypes: readonly MaintenanceScanType[];
  readonly staleAfterDays: number;
  readonly lowConfidenceBelow: number;
  readonly limit: number;
}

export type ToolCommand =
  | ServerInfoCommand
  | ServiceSeedCommand
  | ServiceListCommand
  | ServiceInspectCommand
  | ServiceDesignCommand
  | ServiceMaterialiseCommand
  | ServiceEvolveCommand
  | RecordCreateCommand
  | RecordGetCommand
  | RecordListCommand
  | RecordSearchCommand
  | RecordUpdateCommand
  | RecordDeleteCommand
  | RecordHistoryCommand
  | BootstrapCommand
  | ServiceSummaryCommand
  | BranchCreateCommand
  | BranchListCommand
  | BranchUpdateCommand
  | BranchAssignCommand
  | MaintenanceScanCommand;

export type CommandFor<T extends ToolCommand['tool']> = Extract<ToolCommand, { readonly tool: T }>;
