// Cross-line rules of one artefact's members (operations spec §5.5 and §5.9
// step 3): canonical order without duplicates, per-record history chains,
// records matching their history, branch parents present and acyclic,
// memberships naming existing branches and records, one primary per record;
// and the rules every store enforces on what it holds: record references
// resolve, unique indexes hold, branch slugs are unique.
// Streaming: it keeps the previous key, 16 bytes per record, per branch, per
// reference and per unique-index entry and a bit per record, never the
// members themselves.

import { createHash, hash, type Hash } from 'node:crypto';
import { canonicalJson } from '../../common/json.js';
import type { ManifestV2 } from '../contract/manifest/types.js';
import type { BundleBranch, BundleHistoryEvent, BundleMembership, BundleRecord, FieldValue, HistoryKind } from './content.js';
import { BundleInvalidError } from './errors.js';
import { MEMBER_KINDS, type MemberKind } from './format.js';
import { BitSet, digestWords, IdList, uuidWords } from './id-list.js';

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

interface EntityRecords {
  readonly ids: IdList;
  readonly primaries: BitSet;
}

interface HistoryPosition {
  readonly entity: string;
  readonly id: string;
  readonly version: bigint;
  readonly kind: HistoryKind;
}

/** What a store refuses of one entity's records, from the manifest. */
interface RecordConstraints {
  /** Domain uuid fields referencing another entity's ids. */
  readonly references: readonly { readonly field: string; readonly target: string }[];
  /** The unique indexes, each with its key list. */
  readonly unique: readonly { readonly fields: readonly string[]; readonly keys: IdList }[];
}

/** A record's value of any field a unique index may name (server-managed ones included); null when absent. */
function indexedValue(record: BundleRecord, field: string): FieldValue {
  switch (field) {
    case 'owner_id':
      // One principal owns every record of a store.
      return '';
    case 'created_at':
      return record.createdAt;
    case 'updated_at':
      return record.updatedAt;
    case 'created_via':
      return record.createdVia;
    case 'record_version':
      return record.recordVersion;
    default:
      return record.fields[field] ?? null;
  }
}

interface MembershipPosition {
  readonly branch: string;
  readonly entity: string;
  readonly id: string;
  readonly role: string;
}

/**
 * Feed members in file order; call enter() before the first member of each
 * section (also for empty ones it skips) and finish() at the trailer.
 */
export class ContentRules {
  private section = -1;

  private lastRecord: { readonly entity: string; readonly id: string } | null = null;
  private readonly records = new Map<string, EntityRecords>();
  // Records and history are sorted by the same (entity, id) prefix, so the
  // records a history implies (each chain not ending in delete, at its last
  // version) must equal the records section exactly. Comparing two running
  // digests checks that in constant memory.
  private readonly recordsSeen: Hash = createHash('sha256');
  private readonly recordsImplied: Hash = createHash('sha256');

  private lastEvent: HistoryPosition | null = null;

  private lastBranch: string | null = null;
  private readonly branchIds = new IdList();
  private readonly parentIds = new IdList();
  private readonly hasParent = new BitSet();

  private lastMembership: MembershipPosition | null = null;

  private constraints: ReadonlyMap<string, RecordConstraints> = new Map();
  /** References by target entity, checked once every record is known. */
  private readonly references = new Map<string, IdList>();
  private readonly slugs = new IdList();

  /**
   * The store's own rules on records, from the service's manifest: a
   * reference must name a record of its target entity, and no two records
   * may share a unique index's values (NULLs are distinct, as in SQL). An
   * artefact breaking them passed every other check and then failed the
   * staging unit, leaving its import prepared for ever.
   */
  constrain(manifest: ManifestV2): void {
    const constraints = new Map<string, RecordConstraints>();
    for (const entity of manifest.entities) {
      const references = manifest.relationships.filter((relationship) => relationship.from.entity === entity.name).map((relationship) => ({ field: relationship.from.field, target: relationship.to.entity }));
      // An index naming `id` always holds.
      const unique = manifest.indices.filter((index) => index.entity === entity.name && index.unique && !index.fields.includes('id')).map((index) => ({ fields: index.fields, keys: new IdList() }));
      constraints.set(entity.name, { references, unique });
    }
    this.constraints = constraints;
  }

  /** Moves to a member section, closing every section before it. */
  enter(kind: MemberKind): void {
    const target = MEMBER_KINDS.indexOf(kind);
    if (target < this.section) throw new BundleInvalidError('section_order');
    while (this.section < target) {
      if (this.section >= 0) this.close(MEMBER_KINDS[this.section] as MemberKind);
      this.section++;
    }
  }

  /** Closes every remaining section (at the trailer). */
  finish(): void {
    while (this.section < MEMBER_KINDS.length) {
      if (this.section >= 0) this.close(MEMBER_KINDS[this.section] as MemberKind);
      this.section++;
    }
  }

  private close(kind: MemberKind): void {
    if (kind === 'record') this.closeRecords();
    else if (kind === 'history') this.closeHistory();
    else if (kind === 'branch') this.closeBranches();
  }

  record(record: BundleRecord): void {
    const last = this.lastRecord;
    if (last !== null) {
      const order = compare(last.entity, record.entityName) || compare(last.id, record.recordId);
      if (order >= 0) throw new BundleInvalidError('record_order');
    }
    this.lastRecord = { entity: record.entityName, id: record.recordId };
    let entity = this.records.get(record.entityName);
    if (entity === undefined) {
      entity = { ids: new IdList(), primaries: new BitSet() };
      this.records.set(record.entityName, entity);
    }
    entity.ids.push(record.recordId);
    this.recordsSeen.update(`${record.entityName}\u0000${record.recordId}\u0000${record.recordVersion}\n`);
    const constraints = this.constraints.get(record.entityName);
    if (constraints === undefined) return;
    for (const reference of constraints.references) {
      const target = record.fields[reference.field];
      if (typeof target !== 'string') continue;
      let pending = this.references.get(reference.target);
      if (pending === undefined) {
        pending = new IdList();
        this.references.set(reference.target, pending);
      }
      pending.pushKey(uuidWords(target));
    }
    for (const index of constraints.unique) {
      const values = index.fields.map((field) => indexedValue(record, field));
      if (values.includes(null)) continue;
      index.keys.pushKey(digestWords(hash('sha256', canonicalJson(values), 'hex')));
    }
  }

  private closeRecords(): void {
    for (const [target, pending] of this.references) {
      const ids = this.records.get(target)?.ids;
      for (let i = 0; i < pending.length; i++) if (ids === undefined || ids.indexOfKey(pending.keyAt(i)) < 0) throw new BundleInvalidError('record_reference_missing');
    }
    for (const constraints of this.constraints.values()) {
      for (const index of constraints.unique) if (index.keys.hasDuplicate()) throw new BundleInvalidError('record_unique_duplicate');
    }
  }

  history(event: BundleHistoryEvent): void {
    const last = this.lastEvent;
    const sameRecord = last !== null && last.entity === event.entityName && last.id === event.recordId;
    if (last !== null) {
      const order = compare(last.entity, event.entityName) || compare(last.id, event.recordId) || (last.version < event.recordVersion ? -1 : last.version > event.recordVersion ? 1 : 0);
      if (order >= 0) throw new BundleInvalidError('history_order');
    }
    if (sameRecord) {
      // Versions run 1..n without gaps; create only first, delete only last.
      if (event.recordVersion !== last.version + 1n || event.kind === 'create' || last.kind === 'delete') throw new BundleInvalidError('history_sequence');
    } else {
      if (last !== null) this.closeChain(last);
      if (event.recordVersion !== 1n || event.kind !== 'create') throw new BundleInvalidError('history_sequence');
    }
    this.lastEvent = { entity: event.entityName, id: event.recordId, version: event.recordVersion, kind: event.kind };
  }

  private closeChain(last: HistoryPosition): void {
    if (last.kind !== 'delete') this.recordsImplied.update(`${last.entity}\u0000${last.id}\u0000${last.version}\n`);
  }

  private closeHistory(): void {
    if (this.lastEvent !== null) this.closeChain(this.lastEvent);
    if (this.recordsSeen.digest('hex') !== this.recordsImplied.digest('hex')) throw new BundleInvalidError('history_record_mismatch');
  }

  branch(branch: BundleBranch): void {
    if (this.lastBranch !== null && compare(this.lastBranch, branch.branchId) >= 0) throw new BundleInvalidError('branch_order');
    this.lastBranch = branch.branchId;
    this.slugs.pushKey(digestWords(hash('sha256', branch.slug, 'hex')));
    const index = this.branchIds.push(branch.branchId);
    if (branch.parentBranchId === null) {
      this.parentIds.push('00000000-0000-0000-0000-000000000000');
    } else {
      this.parentIds.push(branch.parentBranchId);
      this.hasParent.testAndSet(index);
    }
  }

  private closeBranches(): void {
    if (this.slugs.hasDuplicate()) throw new BundleInvalidError('branch_slug_duplicate');
    const count = this.branchIds.length;
    const parent = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      if (!this.hasParent.has(i)) {
        parent[i] = -1;
        continue;
      }
      const j = this.branchIds.indexOfKey(this.parentIds.keyAt(i));
      if (j < 0) throw new BundleInvalidError('branch_parent_missing');
      parent[i] = j;
    }
    // Walk each parent chain once: 1 = on the current walk, 2 = known to reach a root.
    const state = new Uint8Array(count);
    const path: number[] = [];
    for (let start = 0; start < count; start++) {
      let node = start;
      while (node >= 0 && state[node] === 0) {
        state[node] = 1;
        path.push(node);
        node = parent[node] as number;
      }
      if (node >= 0 && state[node] === 1) throw new BundleInvalidError('branch_cycle');
      for (const visited of path) state[visited] = 2;
      path.length = 0;
    }
  }

  membership(membership: BundleMembership): void {
    const last = this.lastMembership;
    if (last !== null) {
      const prefix = compare(last.branch, membership.branchId) || compare(last.entity, membership.entityName) || compare(last.id, membership.recordId);
      if (prefix > 0 || (prefix === 0 && compare(last.role, membership.role) >= 0)) throw new BundleInvalidError('membership_order');
      // One membership per (branch, record): never both roles in one branch.
      if (prefix === 0) throw new BundleInvalidError('membership_duplicate');
    }
    this.lastMembership = { branch: membership.branchId, entity: membership.entityName, id: membership.recordId, role: membership.role };
    if (this.branchIds.indexOf(membership.branchId) < 0) throw new BundleInvalidError('membership_branch_missing');
    const entity = this.records.get(membership.entityName);
    const index = entity === undefined ? -1 : entity.ids.indexOf(membership.recordId);
    if (entity === undefined || index < 0) throw new BundleInvalidError('membership_record_missing');
    if (membership.role === 'primary' && entity.primaries.testAndSet(index)) throw new BundleInvalidError('membership_primary_conflict');
  }
}
