// Branch use cases (contract §7): create, list, update and record assignment.
// Every mutation is one data unit of work: write fence, replay ledger,
// preconditions, effect, history and the replay row together. Record rules
// stay in record-rules.ts; SQL stays in the adapters.

import type { JsonObject, JsonValue } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import type { BranchAssignmentTarget, BranchUpdates } from '../contract/requests/commands.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { canAdvance } from './counters.js';
import type { LifecycleService } from './lifecycle.js';
import { StorageFailure, type BranchRole, type BranchStatus, type HistoryKind, type Micros, type ServiceDataPort, type ServiceDataWriter, type StoredBranch, type StoredRecord } from './ports.js';
import { findEntity } from './record-rules.js';
import { layoutOf } from './records.js';
import { dataFailure, mutationFingerprint, readmitting, runMutation, storageLocator } from './data-unit.js';
import { formatTimestamp, timeAfter } from './time.js';

export interface BranchDependencies {
  readonly lifecycle: LifecycleService;
  readonly data: ServiceDataPort;
  readonly principalId: string;
  nowMicros(): Micros;
  newBranchId(): string;
  sha256(text: string): string;
}

export interface CreateBranchCommand {
  readonly serviceId: string;
  readonly slug: string;
  readonly title: string;
  readonly intent: string;
  readonly branchType: string | null;
  readonly parentBranchId: string | null;
  readonly retrievalSummary: string | null;
  readonly idempotencyKey: string;
}

export interface ListBranchesCommand {
  readonly serviceId: string;
  readonly status: BranchStatus | null;
  readonly branchType: string | null;
  readonly parentBranchId: string | null;
  readonly limit: number;
  readonly cursor: string | null;
}

export interface UpdateBranchCommand {
  readonly serviceId: string;
  readonly branchId: string;
  readonly expectedBranchRevision: bigint;
  /** Only the supplied keys are present; null clears where the contract allows it. */
  readonly updates: BranchUpdates;
  readonly idempotencyKey: string;
}

export interface AssignRecordsCommand {
  readonly serviceId: string;
  readonly branchId: string;
  readonly role: BranchRole;
  readonly operation: 'assign' | 'unassign';
  /** 1..100 targets in request order, no duplicate (entity, record). */
  readonly records: readonly BranchAssignmentTarget[];
  readonly idempotencyKey: string;
}

const MAX_TARGETS = 100;
const MAX_PAGE = 100;

/** BranchDocument (contract §7.1), keys in contract order. */
export function branchDocument(branch: StoredBranch): JsonObject {
  return {
    id: branch.id,
    slug: branch.slug,
    title: branch.title,
    intent: branch.intent,
    type: branch.branchType,
    parent_id: branch.parentId,
    status: branch.status,
    retrieval_summary: branch.retrievalSummary,
    created_at: formatTimestamp(branch.createdAt),
    updated_at: formatTimestamp(branch.updatedAt),
    branch_revision: branch.branchRevision,
  };
}

/** The supplied updates under their contract names, absent keys left out (the fingerprint input). */
function suppliedUpdates(updates: BranchUpdates): JsonObject {
  const out: JsonObject = {};
  if (updates.title !== undefined) out['title'] = updates.title;
  if (updates.intent !== undefined) out['intent'] = updates.intent;
  if (updates.branchType !== undefined) out['branch_type'] = updates.branchType;
  if (updates.parentBranchId !== undefined) out['parent_branch_id'] = updates.parentBranchId;
  if (updates.status !== undefined) out['status'] = updates.status;
  if (updates.retrievalSummary !== undefined) out['retrieval_summary'] = updates.retrievalSummary;
  return out;
}

export class BranchService {
  constructor(private readonly deps: BranchDependencies) {}

  async create(command: CreateBranchCommand): Promise<JsonObject> {
    return readmitting(async () => {
      const admission = await this.deps.lifecycle.admitMutation(command.serviceId);
      const fingerprint = mutationFingerprint(this.deps, 'branch_create', {
        slug: command.slug,
        title: command.title,
        intent: command.intent,
        branch_type: command.branchType,
        parent_branch_id: command.parentBranchId,
        retrieval_summary: command.retrievalSummary,
      });
      return runMutation(this.deps, admission, command.idempotencyKey, 'branch_create', fingerprint, async (tx, now) => {
        // The reference checks the parent before the slug; keep that precedence.
        if (command.parentBranchId !== null && !(await tx.getBranch(command.parentBranchId))) throw new AipcsError('not_found_data');
        if (await tx.findBranchBySlug(command.slug)) throw new AipcsError('already_exists');
        const branch: StoredBranch = {
          id: this.deps.newBranchId(),
          slug: command.slug,
          title: command.title,
          intent: command.intent,
          branchType: command.branchType,
          parentId: command.parentBranchId,
          status: 'active',
          retrievalSummary: command.retrievalSummary,
          createdAt: now,
          updatedAt: now,
          branchRevision: 1n,
        };
        try {
          await tx.insertBranch(branch);
        } catch (error) {
          // The parent was just read in this unit and branches are never deleted,
          // so the only constraint a racing writer can trip is the slug.
          if (error instanceof StorageFailure && error.kind === 'constraint') throw new AipcsError('already_exists', { cause: error });
          throw error;
        }
        return { branch: branchDocument(branch), replayed: false };
      });
    });
  }

  async list(command: ListBranchesCommand): Promise<JsonObject> {
    const admission = await this.deps.lifecycle.admitData(command.serviceId);
    const limit = Math.min(Math.max(Math.trunc(command.limit), 1), MAX_PAGE);
    const identity: JsonValue = {
      principal: this.deps.principalId,
      service_id: admission.service.serviceId,
      schema_version: BigInt(admission.service.schemaVersion ?? 0),
      tool: 'branch_list',
      query: { status: command.status, branch_type: command.branchType, parent_branch_id: command.parentBranchId },
    };
    const afterId = command.cursor === null ? null : decodeCursor(this.deps, 'branch', command.cursor, identity);
    try {
      const rows = await this.deps.data.read(storageLocator(admission), this.deps.principalId, (tx) =>
        tx.listBranches({ status: command.status, branchType: command.branchType, parentId: command.parentBranchId, afterId, limit: limit + 1 }),
      );
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        branches: page.map(branchDocument),
        next_cursor: rows.length > limit && last ? encodeCursor(this.deps, 'branch', last.id, identity) : null,
      };
    } catch (error) {
      return dataFailure(error);
    }
  }

  async update(command: UpdateBranchCommand): Promise<JsonObject> {
    return readmitting(async () => {
      const admission = await this.deps.lifecycle.admitMutation(command.serviceId);
      const supplied = suppliedUpdates(command.updates);
      if (Object.keys(supplied).length === 0) throw new AipcsError('validation_failed');
      const fingerprint = mutationFingerprint(this.deps, 'branch_update', {
        branch_id: command.branchId,
        expected_branch_revision: command.expectedBranchRevision,
        updates: supplied,
      });
      const updates = command.updates;
      return runMutation(this.deps, admission, command.idempotencyKey, 'branch_update', fingerprint, async (tx, now) => {
        const current = await tx.getBranch(command.branchId);
        if (!current) throw new AipcsError('not_found_data');
        if (current.branchRevision !== command.expectedBranchRevision) throw new AipcsError('stale_branch_revision');
        const parentId = updates.parentBranchId === undefined ? current.parentId : updates.parentBranchId;
        if (parentId !== null && parentId !== current.parentId) {
          if (parentId === current.id) throw new AipcsError('constraint_violation');
          if (!(await tx.getBranch(parentId))) throw new AipcsError('not_found_data');
          if (await tx.branchReachesByParents(parentId, current.id)) throw new AipcsError('constraint_violation');
        }
        const next: StoredBranch = {
          ...current,
          title: updates.title ?? current.title,
          intent: updates.intent ?? current.intent,
          branchType: updates.branchType === undefined ? current.branchType : updates.branchType,
          parentId,
          status: updates.status ?? current.status,
          retrievalSummary: updates.retrievalSummary === undefined ? current.retrievalSummary : updates.retrievalSummary,
        };
        const changed =
          next.title !== current.title ||
          next.intent !== current.intent ||
          next.branchType !== current.branchType ||
          next.parentId !== current.parentId ||
          next.status !== current.status ||
          next.retrievalSummary !== current.retrievalSummary;
        // A no-op still completes (and consumes the key) without advancing the revision.
        if (!changed) return { branch: branchDocument(current), replayed: false };
        if (!canAdvance(current.branchRevision)) throw new AipcsError('constraint_violation');
        const updated: StoredBranch = { ...next, updatedAt: timeAfter(now, current.createdAt, current.updatedAt), branchRevision: current.branchRevision + 1n };
        await tx.updateBranch(updated);
        return { branch: branchDocument(updated), replayed: false };
      });
    });
  }

  async assign(command: AssignRecordsCommand): Promise<JsonObject> {
    return readmitting(async () => {
      const admission = await this.deps.lifecycle.admitMutation(command.serviceId);
      if (command.records.length === 0 || command.records.length > MAX_TARGETS) throw new AipcsError('validation_failed');
      const targets = command.records.map((target) => {
        const entity = findEntity(admission.manifest, target.entityName);
        return { target, layout: layoutOf(admission, entity.name) };
      });
      const fingerprint = mutationFingerprint(this.deps, 'branch_assign', {
        branch_id: command.branchId,
        role: command.role,
        operation: command.operation,
        records: command.records.map((target) => ({
          entity_name: target.entityName,
          record_id: target.recordId,
          expected_record_version: target.expectedRecordVersion,
        })),
      });
      return runMutation(this.deps, admission, command.idempotencyKey, 'branch_assign', fingerprint, async (tx, now) => {
        const branch = await tx.getBranch(command.branchId);
        if (!branch) throw new AipcsError('not_found_data');
        if (command.operation === 'assign' && branch.status !== 'active') throw new AipcsError('constraint_violation');
        // Every target is checked before anything changes: the request is all-or-nothing.
        const current: StoredRecord[] = [];
        for (const { target, layout } of targets) {
          const record = await tx.getRecord(layout, target.recordId);
          if (!record) throw new AipcsError('not_found_data');
          if (record.recordVersion !== target.expectedRecordVersion) throw new AipcsError('stale_record_version');
          current.push(record);
        }
        const results: JsonObject[] = [];
        for (const [index, { target, layout }] of targets.entries()) {
          const record = current[index] as StoredRecord;
          const kind = await this.applyDelta(tx, command, target, now);
          let version = record.recordVersion;
          if (kind !== null) {
            // The unit rolls back every delta already applied (D40).
            if (!canAdvance(version)) throw new AipcsError('constraint_violation');
            version += 1n;
            const at = timeAfter(now, record.createdAt, record.updatedAt);
            await tx.updateRecord(layout, { ...record, recordVersion: version, updatedAt: at });
            await tx.appendHistory({ entityName: target.entityName, recordId: record.id, recordVersion: version, kind, before: record.fields, after: record.fields, occurredAt: at });
          }
          results.push({ entity_name: target.entityName, id: record.id, record_version: version });
        }
        return { records: results, replayed: false };
      });
    });
  }

  /** One membership delta of contract §7.5; the history kind of an effective change, or null for a no-op. */
  private async applyDelta(tx: ServiceDataWriter, command: AssignRecordsCommand, target: BranchAssignmentTarget, now: Micros): Promise<HistoryKind | null> {
    const here = await tx.getMembership(target.entityName, target.recordId, command.branchId);
    if (command.operation === 'unassign') {
      if (here !== command.role) return null;
      await tx.removeMembership(target.entityName, target.recordId, command.branchId);
      return command.role === 'primary' ? 'primary_unassign' : 'related_unassign';
    }
    if (command.role === 'related') {
      // A primary membership here already covers the branch.
      if (here !== undefined) return null;
      await tx.putMembership(target.entityName, target.recordId, command.branchId, 'related', now);
      return 'related_assign';
    }
    if (here === 'primary') return null;
    const previous = await tx.getPrimaryBranch(target.entityName, target.recordId);
    if (previous !== undefined) await tx.removeMembership(target.entityName, target.recordId, previous);
    // Replaces a related membership in this branch, if any.
    await tx.putMembership(target.entityName, target.recordId, command.branchId, 'primary', now);
    return previous === undefined ? 'primary_assign' : 'primary_move';
  }
}
