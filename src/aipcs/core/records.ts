// Record use cases (contract §6): create, get, list, search, update, delete
// and history. Admission and semantic validation come first, then one data
// unit of work that checks the write fence, the replay ledger and the
// preconditions, writes the data, its history event and the replay record
// together. Nothing here knows which backend runs it.

import type { JsonObject, JsonValue } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import type { EntityDefinition, ManifestV2 } from '../contract/manifest/types.js';
import { canAdvance } from './counters.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { TextBudget } from './text-budget.js';
import { timeAfter } from './time.js';
import { CREATED_VIA, dataFailure, mutationFingerprint, readmitting, runMutation, storageLocator } from './data-unit.js';
import type { DataAdmission, LifecycleService } from './lifecycle.js';
import {
  type BranchScope,
  type EntityLayout,
  type FieldSet,
  type Micros,
  type RecordFilter,
  type ServiceDataPort,
  type ServiceDataWriter,
  type StoredRecord,
} from './ports.js';
import {
  checkFieldValue,
  checkRecordSize,
  checkSuppliedFields,
  completeFieldSet,
  domainAttributes,
  fieldSetJson,
  findEntity,
  historyEventDocument,
  recordDocument,
} from './record-rules.js';

export interface RecordDependencies {
  readonly lifecycle: LifecycleService;
  readonly data: ServiceDataPort;
  readonly principalId: string;
  nowMicros(): Micros;
  newRecordId(): string;
  sha256(text: string): string;
}

export interface CreateRecordCommand {
  readonly serviceId: string;
  readonly entityName: string;
  readonly record: JsonObject;
  readonly idempotencyKey: string;
}

export interface UpdateRecordCommand {
  readonly serviceId: string;
  readonly entityName: string;
  readonly recordId: string;
  readonly updates: JsonObject;
  readonly expectedRecordVersion: bigint;
  readonly idempotencyKey: string;
}

export interface DeleteRecordCommand {
  readonly serviceId: string;
  readonly entityName: string;
  readonly recordId: string;
  readonly expectedRecordVersion: bigint;
  readonly idempotencyKey: string;
}

export interface ListRecordsCommand {
  readonly serviceId: string;
  readonly entityName: string;
  readonly limit: number;
  readonly cursor: string | null;
  readonly branch: BranchScope | null;
  /** Search only: declared exact filters (1..16). */
  readonly filters?: JsonObject;
}

export interface HistoryCommand {
  readonly serviceId: string;
  readonly entityName: string;
  readonly recordId: string | null;
  readonly limit: number;
  readonly cursor: string | null;
}

export function layoutOf(admission: DataAdmission, entityName: string): EntityLayout {
  const layout = admission.layout.entities.find((entity) => entity.name === entityName);
  if (!layout) throw new AipcsError('validation_failed');
  return layout;
}

export class RecordService {
  constructor(private readonly deps: RecordDependencies) {}

  /** Relationship sources of the entity must point at existing records of their targets. */
  private async checkReferences(tx: ServiceDataWriter, layout: EntityLayout, fields: FieldSet): Promise<void> {
    for (const fk of layout.foreignKeys) {
      const value = fields[fk.column];
      if (typeof value === 'string' && !(await tx.recordExists(fk.targetEntity, value))) throw new AipcsError('constraint_violation');
    }
  }

  async create(command: CreateRecordCommand): Promise<JsonObject> {
    return readmitting(async () => {
      const admission = await this.deps.lifecycle.admitMutation(command.serviceId);
      const entity = findEntity(admission.manifest, command.entityName);
      const layout = layoutOf(admission, entity.name);
      checkRecordSize(command.record);
      const fields = completeFieldSet(entity, checkSuppliedFields(entity, command.record));
      checkRecordSize(fieldSetJson(fields));
      const fingerprint = mutationFingerprint(this.deps, 'create', { entity_name: entity.name, fields: fieldSetJson(fields) });
      return runMutation(this.deps, admission, command.idempotencyKey, 'create', fingerprint, async (tx, now) => {
        await this.checkReferences(tx, layout, fields);
        const record: StoredRecord = { id: this.deps.newRecordId(), createdAt: now, updatedAt: now, createdVia: CREATED_VIA, recordVersion: 1n, fields };
        await tx.insertRecord(layout, record);
        await tx.appendHistory({ entityName: entity.name, recordId: record.id, recordVersion: 1n, kind: 'create', before: null, after: fields, occurredAt: now });
        return { record: recordDocument(entity.name, record), replayed: false };
      });
    });
  }

  async update(command: UpdateRecordCommand): Promise<JsonObject> {
    return readmitting(async () => {
      const admission = await this.deps.lifecycle.admitMutation(command.serviceId);
      const entity = findEntity(admission.manifest, command.entityName);
      const layout = layoutOf(admission, entity.name);
      checkRecordSize(command.updates);
      const updates = checkSuppliedFields(entity, command.updates);
      const fingerprint = mutationFingerprint(this.deps, 'update', {
        entity_name: entity.name,
        record_id: command.recordId,
        expected_record_version: command.expectedRecordVersion,
        updates: command.updates,
      });
      return runMutation(this.deps, admission, command.idempotencyKey, 'update', fingerprint, async (tx, now) => {
        const current = await tx.getRecord(layout, command.recordId);
        if (!current) throw new AipcsError('not_found_data');
        if (current.recordVersion !== command.expectedRecordVersion) throw new AipcsError('stale_record_version');
        if (!canAdvance(current.recordVersion)) throw new AipcsError('constraint_violation');
        const merged = completeFieldSet(entity, { ...current.fields, ...Object.fromEntries(updates) });
        checkRecordSize(fieldSetJson(merged));
        await this.checkReferences(tx, layout, merged);
        const at = timeAfter(now, current.createdAt, current.updatedAt);
        const record: StoredRecord = { ...current, fields: merged, updatedAt: at, recordVersion: current.recordVersion + 1n };
        await tx.updateRecord(layout, record);
        await tx.appendHistory({ entityName: entity.name, recordId: record.id, recordVersion: record.recordVersion, kind: 'update', before: current.fields, after: merged, occurredAt: at });
        return { record: recordDocument(entity.name, record), replayed: false };
      });
    });
  }

  async delete(command: DeleteRecordCommand): Promise<JsonObject> {
    return readmitting(async () => {
      const admission = await this.deps.lifecycle.admitMutation(command.serviceId);
      const entity = findEntity(admission.manifest, command.entityName);
      const layout = layoutOf(admission, entity.name);
      const fingerprint = mutationFingerprint(this.deps, 'delete', {
        entity_name: entity.name,
        record_id: command.recordId,
        expected_record_version: command.expectedRecordVersion,
      });
      const referencing = admission.manifest.relationships
        .filter((relationship) => relationship.to.entity === entity.name)
        .map((relationship) => ({ entity: relationship.from.entity, column: relationship.from.field }));
      return runMutation(this.deps, admission, command.idempotencyKey, 'delete', fingerprint, async (tx, now) => {
        const current = await tx.getRecord(layout, command.recordId);
        if (!current) throw new AipcsError('not_found_data');
        if (current.recordVersion !== command.expectedRecordVersion) throw new AipcsError('stale_record_version');
        if (await tx.isReferenced({ entity: entity.name, id: current.id }, referencing)) throw new AipcsError('constraint_violation');
        if (!canAdvance(current.recordVersion)) throw new AipcsError('constraint_violation');
        const version = current.recordVersion + 1n;
        await tx.deleteRecord(layout, current.id);
        await tx.appendHistory({ entityName: entity.name, recordId: current.id, recordVersion: version, kind: 'delete', before: current.fields, after: null, occurredAt: timeAfter(now, current.createdAt, current.updatedAt) });
        return { id: current.id, record_version: version, replayed: false };
      });
    });
  }

  async get(serviceId: string, entityName: string, recordId: string): Promise<JsonObject> {
    const admission = await this.deps.lifecycle.admitData(serviceId);
    const entity = findEntity(admission.manifest, entityName);
    const layout = layoutOf(admission, entity.name);
    try {
      const record = await this.deps.data.read(storageLocator(admission), this.deps.principalId, (tx) => tx.getRecord(layout, recordId));
      if (!record) throw new AipcsError('not_found_data');
      return recordDocument(entity.name, record);
    } catch (error) {
      return dataFailure(error);
    }
  }

  async list(command: ListRecordsCommand): Promise<JsonObject> {
    const admission = await this.deps.lifecycle.admitData(command.serviceId);
    const entity = findEntity(admission.manifest, command.entityName);
    const layout = layoutOf(admission, entity.name);
    const filters = command.filters === undefined ? [] : searchFilters(entity, command.filters);
    const identity = this.queryIdentity(admission, command.filters === undefined ? 'list' : 'search', {
      entity_name: entity.name,
      filters: command.filters ?? null,
      branch: command.branch === null ? null : { branch_id: command.branch.branchId, role: command.branch.role },
    });
    const afterId = command.cursor === null ? null : decodeCursor(this.deps, 'record', command.cursor, identity);
    try {
      const rows = await this.deps.data.read(storageLocator(admission), this.deps.principalId, (tx) =>
        tx.queryRecords(layout, { filters, branch: command.branch, afterId, limit: command.limit + 1 }),
      );
      const page = boundedPage(rows, command.limit, (record) => recordDocument(entity.name, record));
      return {
        records: page.documents,
        next_cursor: page.more && page.last ? encodeCursor(this.deps, 'record', page.last.id, identity) : null,
      };
    } catch (error) {
      return dataFailure(error);
    }
  }

  async history(command: HistoryCommand): Promise<JsonObject> {
    const admission = await this.deps.lifecycle.admitData(command.serviceId);
    const entity = findEntity(admission.manifest, command.entityName);
    const identity = this.queryIdentity(admission, 'history', { entity_name: entity.name, record_id: command.recordId });
    const after = command.cursor === null ? null : decodeCursor(this.deps, 'history', command.cursor, identity);
    try {
      const rows = await this.deps.data.read(storageLocator(admission), this.deps.principalId, (tx) =>
        tx.history(entity.name, command.recordId, after === null ? null : BigInt(after), command.limit + 1, PAGE_TEXT_BUDGET),
      );
      const page = boundedPage(rows.events, command.limit, (event) => historyEventDocument(entity, event), rows.cut);
      return {
        events: page.documents,
        next_cursor: page.more && page.last ? encodeCursor(this.deps, 'history', page.last.sequence.toString(), identity) : null,
      };
    } catch (error) {
      return dataFailure(error);
    }
  }

  /** What a cursor is bound to: principal, service, schema version, tool and query. */
  queryIdentity(admission: DataAdmission, tool: string, query: JsonObject): JsonValue {
    return {
      principal: this.deps.principalId,
      service_id: admission.service.serviceId,
      schema_version: BigInt(admission.service.schemaVersion ?? 0),
      tool,
      query,
    };
  }
}

/**
 * Characters of contract JSON (as `content[0].text` renders it: ASCII only)
 * that one page of records or history events may hold. A tool result carries
 * the envelope twice (text and structuredContent) and the JSON-RPC line
 * escapes the text once more, so a line is at most about three times this:
 * below the 10 MiB a line may have for the MCP TypeScript SDK client, which
 * closes the connection on a longer one. 100 records of 64 KiB, or 50 history
 * events with two 64 KiB snapshots each, went far beyond it.
 */
export const PAGE_TEXT_BUDGET = 3 * 1024 * 1024;

/**
 * The first rows of a page, at most `limit` and (always at least one) as many
 * as fit PAGE_TEXT_BUDGET; `more` when rows beyond the page exist (`rows`
 * holds one more than `limit` when there are more, or storage stopped
 * reading for size: `cut`), so a page cut short for size still gets a cursor
 * to the rest.
 */
export function boundedPage<T>(rows: readonly T[], limit: number, document: (row: T) => JsonObject, cut = false): { documents: JsonObject[]; last: T | undefined; more: boolean } {
  const budget = new TextBudget(PAGE_TEXT_BUDGET);
  const documents: JsonObject[] = [];
  // Built one at a time up to the first that does not fit: a page of large
  // records or snapshots keeps a few, and the rest were built for nothing.
  for (const row of rows.slice(0, limit)) {
    const kept = budget.prefix([document(row)], documents.length === 0);
    if (kept.length === 0) break;
    documents.push(...kept);
  }
  return { documents, last: rows[documents.length - 1], more: cut || rows.length > documents.length };
}

/** Search filters (contract §6.8): declared, filterable, value valid for the field. */
export function searchFilters(entity: EntityDefinition, filters: JsonObject): RecordFilter[] {
  const attributes = new Map(domainAttributes(entity).map((attribute) => [attribute.name, attribute]));
  const result: RecordFilter[] = [];
  for (const [field, value] of Object.entries(filters)) {
    const attribute = attributes.get(field);
    if (!attribute || value === null || typeof value === 'object') throw new AipcsError('validation_failed');
    if (attribute.type === 'string_list') {
      if (attribute.retrieval_mode !== 'membership') throw new AipcsError('validation_failed');
      // Like a stored member (contract §6.3): 1..256 characters, no U+0000 (which PostgreSQL cannot bind).
      if (typeof value !== 'string' || value.length === 0 || value.includes('\u0000') || [...value].length > 256) throw new AipcsError('validation_failed');
      result.push({ kind: 'member', field, value });
      continue;
    }
    if (attribute.retrieval_mode === 'annotation') throw new AipcsError('validation_failed');
    // Filters are not held to allowed_values: a value outside the set matches nothing.
    const checked = checkFieldValue({ ...attribute, allowed_values: null }, value);
    result.push({ kind: 'equals', field, value: checked as string | bigint | number | boolean });
  }
  return result;
}

export type { ManifestV2 };
