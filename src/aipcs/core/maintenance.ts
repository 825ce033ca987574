// The advisory maintenance scan (contract §8.3): read-only, deterministic, at
// most 100 candidates. Which signals an entity supports comes from the derived
// model; each signal's rule lives here once, over keyset batches of one
// snapshot. Never writes; details never carry record prose or authority values.

import type { JsonObject } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import { zeroOffsetInstantMicros } from '../contract/iso-datetime.js';
import { deriveModel, type DerivedEntity, type MaintenanceScanType } from '../contract/manifest/derived-model.js';
import type { AttributeType } from '../contract/manifest/types.js';
import { compareNumbers, utf8Length } from '../contract/schema-check.js';
import type { LifecycleService } from './lifecycle.js';
import type { EntityLayout, FieldValue, Micros, ScanCondition, ServiceDataPort, ServiceDataReader, ScannedRecord } from './ports.js';
import { dataFailure } from './data-unit.js';
import { layoutOf } from './records.js';

export interface MaintenanceDependencies {
  readonly lifecycle: LifecycleService;
  readonly data: ServiceDataPort;
  readonly principalId: string;
  nowMicros(): Micros;
}

export interface MaintenanceScanCommand {
  readonly serviceId: string;
  /** A declared entity, or null for all entities. */
  readonly entityName: string | null;
  /** Only records with any membership in this branch; null for all records. */
  readonly branchId: string | null;
  /** Distinct requested scan types (all eight when the caller sent none). */
  readonly scanTypes: readonly MaintenanceScanType[];
  /** 1..3650 (default 90). */
  readonly staleAfterDays: number;
  /** 0..1 (default 0.5). */
  readonly lowConfidenceBelow: number;
  /** 1..100 candidates (default 50). */
  readonly limit: number;
}

export const MAX_CANDIDATES = 100;
export const BLOB_THRESHOLD_BYTES = 1024;
const DAY_MICROS = 86_400_000_000n;
const BATCH = 256;
/** Records one narrowed read walks at most (see scanEntity). */
const WINDOW = 4096;

interface Candidate {
  readonly id: string;
  readonly detail: JsonObject;
}

const clamp = (value: number, min: number, max: number): number => Math.min(Math.max(Math.trunc(value), min), max);

/** Blank the way the reference's SQL sees it: empty or only U+0020 spaces. */
const isBlank = (text: string): boolean => /^ *$/.test(text);

/** Empty once Python's str.strip() is applied: Unicode White_Space plus U+001C-U+001F. */
const isPythonBlank = (text: string): boolean => /^[\p{White_Space}\u001c-\u001f]*$/u.test(text);

/** Whether a declared field holds a value (contract §8.3: null, blank strings and empty lists are absent). */
function isPresent(type: AttributeType | undefined, value: FieldValue | undefined): boolean {
  if (value === null || value === undefined) return false;
  if (type === 'string') return typeof value === 'string' && !isBlank(value);
  if (type === 'string_list') return Array.isArray(value) && value.length > 0;
  return true;
}

/** Per-scan evaluation settings derived once per request. */
interface ScanContext {
  readonly now: Micros;
  readonly staleCutoff: Micros;
  readonly staleAfterDays: number;
  readonly threshold: number;
  readonly branchId: string | null;
}

export class MaintenanceService {
  constructor(private readonly deps: MaintenanceDependencies) {}

  async scan(command: MaintenanceScanCommand): Promise<JsonObject> {
    const admission = await this.deps.lifecycle.admitData(command.serviceId);
    const model = deriveModel(admission.manifest);
    const selected = command.entityName === null ? model.entities : model.entities.filter((entity) => entity.name === command.entityName);
    if (selected.length === 0) throw new AipcsError('validation_failed');
    const requested = [...new Set(command.scanTypes)].sort();
    if (requested.length === 0) throw new AipcsError('validation_failed');
    const unavailable = requested.filter((type) => !selected.some((entity) => entity.maintenance.available.includes(type)));
    const threshold = Number(command.lowConfidenceBelow);
    if (!Number.isFinite(threshold) || threshold < 0 || threshold > 1) throw new AipcsError('validation_failed');
    const limit = clamp(command.limit, 1, MAX_CANDIDATES);
    const staleAfterDays = clamp(command.staleAfterDays, 1, 3650);
    const now = this.deps.nowMicros();
    const context: ScanContext = {
      now,
      staleCutoff: now - BigInt(staleAfterDays) * DAY_MICROS,
      staleAfterDays,
      threshold,
      branchId: command.branchId,
    };
    if (!admission.service.storage) throw new AipcsError('storage_unavailable');
    try {
      const found = await this.deps.data.read(admission.service.storage, this.deps.principalId, async (tx) => {
        const perEntity = new Map<string, Map<MaintenanceScanType, Candidate[]>>();
        for (const entity of selected) {
          const types = requested.filter((type) => entity.maintenance.available.includes(type));
          if (types.length > 0) perEntity.set(entity.name, await this.scanEntity(tx, layoutOf(admission, entity.name), entity, types, limit, context));
        }
        return perEntity;
      });
      // Deterministic order: scan types alphabetically, then entities, then record ids.
      const candidates: JsonObject[] = [];
      for (const type of requested) {
        for (const entity of selected) {
          for (const candidate of found.get(entity.name)?.get(type) ?? []) {
            if (candidates.length >= limit) break;
            candidates.push({ scan_type: type, record: { entity_name: entity.name, id: candidate.id }, detail: candidate.detail });
          }
        }
      }
      return { candidates, unavailable_scan_types: unavailable };
    } catch (error) {
      return dataFailure(error);
    }
  }

  /**
   * One keyset pass over the entity, collecting the first `limit` candidates
   * of each scan type by id. Duplicates need group sizes over the whole
   * scope: the store finds them in one pass per field, not per batch.
   */
  private async scanEntity(
    tx: ServiceDataReader,
    layout: EntityLayout,
    entity: DerivedEntity,
    types: readonly MaintenanceScanType[],
    limit: number,
    context: ScanContext,
  ): Promise<Map<MaintenanceScanType, Candidate[]>> {
    const lists = new Map<MaintenanceScanType, Candidate[]>(types.map((type) => [type, []]));
    if (types.includes('duplicate_authority')) lists.set('duplicate_authority', await this.duplicates(tx, layout, entity, limit, context.branchId));
    const batchTypes = types.filter((type) => type !== 'duplicate_authority');
    const typeOf = new Map(entity.domainFields.map((field) => [field.name, field.type]));
    const open = (type: MaintenanceScanType): boolean => (lists.get(type)?.length ?? limit) < limit;
    const add = (type: MaintenanceScanType, id: string, detail: JsonObject): void => {
      const list = lists.get(type);
      if (list && list.length < limit) list.push({ id, detail });
    };
    let afterId: string | null = null;
    while (batchTypes.some(open)) {
      // The store skips the records no open type could take (over the whole
      // entity or a branch's members); a scan finding few candidates would
      // otherwise decode them all, and on SQLite hold the service meanwhile.
      // A narrowed read walks at most WINDOW records, so that the loop still
      // gives the event loop a turn however few records meet the conditions.
      const anyOf = this.narrowing(entity, layout, batchTypes.filter(open), context);
      const throughId: string | null = anyOf === null ? null : await tx.idAfter(layout, afterId, WINDOW, context.branchId);
      const batch = await tx.scanRecords(layout, { memberOf: context.branchId, afterId, limit: BATCH, ...(anyOf === null ? {} : { anyOf }), ...(throughId === null ? {} : { throughId }) });
      for (const record of batch) {
        for (const type of batchTypes) {
          if (!open(type)) continue;
          const detail = this.evaluate(type, entity, typeOf, record, context);
          if (detail) add(type, record.id, detail);
        }
      }
      const last = batch[batch.length - 1];
      if (batch.length === BATCH && last) afterId = last.id;
      else if (anyOf !== null && throughId !== null) afterId = throughId;
      else break;
      // An in-process store reads synchronously: without a turn here one scan
      // would hold every other request of the process until its last batch.
      await new Promise((resolve) => setImmediate(resolve));
    }
    return lists;
  }

  /**
   * Conditions met by every candidate of these types (and maybe by other
   * records: evaluate still decides), or null when a type has none.
   */
  private narrowing(entity: DerivedEntity, layout: EntityLayout, types: readonly MaintenanceScanType[], context: ScanContext): ScanCondition[] | null {
    const signals = entity.maintenance;
    const columnType = new Map(layout.columns.map((column) => [column.name, column.type]));
    const conditions: ScanCondition[] = [];
    for (const type of types) {
      switch (type) {
        case 'blob_candidate':
          // More than 1024 UTF-8 bytes needs more than 256 characters.
          for (const field of signals.blobCandidateFields) conditions.push({ kind: 'longer_than', field, characters: BLOB_THRESHOLD_BYTES / 4 });
          break;
        case 'expired':
          if (signals.expiryField !== null) conditions.push({ kind: 'not_null', field: signals.expiryField });
          break;
        case 'low_confidence':
          if (signals.confidenceField !== null) conditions.push({ kind: 'at_most', field: signals.confidenceField, value: context.threshold });
          break;
        case 'missing_authority':
          if (signals.authorityFields.length > 0) conditions.push({ kind: 'all_blank', fields: signals.authorityFields.map((name) => ({ name, type: columnType.get(name) ?? 'text' })) });
          break;
        case 'stale':
          conditions.push({ kind: 'updated_at_most', micros: context.staleCutoff });
          break;
        case 'superseded':
          if (signals.supersededSignals.includes('status')) conditions.push({ kind: 'text_equals', field: 'status', value: 'superseded' });
          if (columnType.has('superseded_by')) conditions.push({ kind: 'not_null', field: 'superseded_by' });
          break;
        case 'unbranched':
          conditions.push({ kind: 'no_primary' });
          break;
        case 'duplicate_authority':
          return null;
      }
    }
    return conditions;
  }

  private evaluate(type: MaintenanceScanType, entity: DerivedEntity, typeOf: ReadonlyMap<string, AttributeType>, record: ScannedRecord, context: ScanContext): JsonObject | undefined {
    const signals = entity.maintenance;
    const fields = record.fields;
    switch (type) {
      case 'blob_candidate': {
        for (const field of signals.blobCandidateFields) {
          const value = fields[field];
          if (typeof value !== 'string') continue;
          const bytes = utf8Length(value);
          if (bytes > BLOB_THRESHOLD_BYTES) return { byte_length: BigInt(bytes), field_name: field, threshold_bytes: BigInt(BLOB_THRESHOLD_BYTES) };
        }
        return undefined;
      }
      case 'expired': {
        if (signals.expiryField === null) return undefined;
        const value = fields[signals.expiryField];
        const instant = typeof value === 'string' ? zeroOffsetInstantMicros(value) : null;
        return instant !== null && instant < context.now ? { field_name: signals.expiryField } : undefined;
      }
      case 'low_confidence': {
        if (signals.confidenceField === null) return undefined;
        const value = fields[signals.confidenceField];
        if (typeof value !== 'number' && typeof value !== 'bigint') return undefined;
        return compareNumbers(value, context.threshold) < 0 ? { threshold: context.threshold } : undefined;
      }
      case 'missing_authority': {
        const declared = signals.authorityFields;
        if (declared.length === 0 || declared.some((name) => isPresent(typeOf.get(name), fields[name]))) return undefined;
        return { declared_field_count: BigInt(declared.length) };
      }
      case 'stale': {
        if (record.updatedAt > context.staleCutoff) return undefined;
        const age = (context.now - record.updatedAt) / DAY_MICROS;
        return { age_days: age < 0n ? 0n : age, threshold_days: BigInt(context.staleAfterDays) };
      }
      case 'superseded': {
        // Once the scan is available, a declared superseded_by of any type
        // counts (contract §8.3: "a declared superseded_by is present").
        const statusHit = signals.supersededSignals.includes('status') && fields['status'] === 'superseded';
        const byType = typeOf.get('superseded_by');
        const byValue = fields['superseded_by'];
        if (!statusHit && !isPresent(byType, byValue)) return undefined;
        const hits: string[] = statusHit ? ['status'] : [];
        // The reference selects with SQL trim() (spaces only) but names the
        // signal after Python's str.strip(), so a superseded_by holding only
        // other whitespace is a candidate whose signals leave it out.
        if (isPresent(byType, byValue) && !(typeof byValue === 'string' && isPythonBlank(byValue))) hits.push('superseded_by');
        return { signals: hits };
      }
      case 'unbranched':
        return record.hasPrimary ? undefined : { missing_role: 'primary' };
      case 'duplicate_authority':
        return undefined;
    }
  }

  /**
   * The first `limit` records by id whose authority reference another record
   * in scope shares (first declared field wins): a record beyond the first
   * `limit` hits of an earlier field has at least `limit` candidates before it.
   */
  private async duplicates(tx: ServiceDataReader, layout: EntityLayout, entity: DerivedEntity, limit: number, branchId: string | null): Promise<Candidate[]> {
    const hits = new Map<string, Candidate>();
    for (const field of entity.maintenance.duplicateAuthorityFields) {
      for (const row of await tx.duplicateValues(layout, field, branchId, limit)) {
        if (!hits.has(row.id)) hits.set(row.id, { id: row.id, detail: { duplicate_count: row.count, field_name: field } });
      }
    }
    return [...hits.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, limit);
  }
}
