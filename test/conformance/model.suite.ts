// Conformance: a model-based walk over the data tools. Random sequences of
// record, branch and assignment operations (with exact retries, changed
// requests under used keys, stale versions and mixed valid/invalid targets)
// run against the application over any adapter, and after every step the
// answers are compared with an independent model written from the contract:
// records and versions (§6.5-§6.10), history (§6.11), search and keyset
// cursors (§6.7, §6.8, §6.12), the data ledger (§6.4), branches and
// memberships (§7), summary counts and facets (§8.2) and the unbranched scan
// (§8.3).

import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApplication, type Application, type StoragePorts } from '../../src/aipcs/core/application.js';
import type { AssignRecordsCommand, CreateBranchCommand, UpdateBranchCommand } from '../../src/aipcs/core/branches.js';
import type { CreateRecordCommand, DeleteRecordCommand, ListRecordsCommand, UpdateRecordCommand } from '../../src/aipcs/core/records.js';
import { manualClock } from '../../src/common/clock.js';
import type { JsonObject, JsonValue } from '../../src/common/json.js';
import { serverManaged } from '../support/manifests.js';
import { manifest, sha256, type StorageHarness, type StorageLocation } from './harness.js';
import { seededRandom } from '../support/prng.js';

type Entity = 'note' | 'project';
type Role = 'primary' | 'related';
type Status = 'active' | 'archived' | 'superseded';
type Fields = Record<string, JsonValue>;

const MISSING = '99999999-9999-4999-8999-999999999999';
const FIELDS: Record<Entity, readonly string[]> = {
  note: ['confidence', 'pinned', 'priority', 'project_id', 'status', 'tags', 'title'],
  project: ['code', 'name'],
};
const TAGS = ['x', 'y', 'Z', 'é', '2', '10'];
/** The field the one evolve of a walk appends to note. */
const EVOLVED_FIELD = 'summary';
const ENTITIES: readonly Entity[] = ['note', 'project'];
// Declared out of order: the summary lists facets by (entity, field).
const FACETS: readonly (readonly [Entity, string])[] = [
  ['note', 'tags'],
  ['note', 'status'],
  ['note', 'pinned'],
  ['note', 'priority'],
  ['note', 'confidence'],
];

function modelManifest(evolved = false): JsonObject {
  return {
    manifest_version: 2n,
    schema_version: evolved ? 2n : 1n,
    entities: [
      {
        name: 'note',
        attributes: [
          ...serverManaged(),
          { name: 'title', type: 'string', required: true },
          { name: 'status', type: 'string', allowed_values: ['draft', 'complete', 'superseded'] },
          { name: 'priority', type: 'integer' },
          { name: 'pinned', type: 'boolean' },
          { name: 'confidence', type: 'number' },
          { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
          { name: 'project_id', type: 'uuid' },
          ...(evolved ? [{ name: EVOLVED_FIELD, type: 'string' }] : []),
        ],
      },
      { name: 'project', attributes: [...serverManaged(), { name: 'name', type: 'string', required: true }, { name: 'code', type: 'string' }] },
    ],
    relationships: [{ name: 'note_project_fk', from: { entity: 'note', field: 'project_id' }, to: { entity: 'project', field: 'id' }, on_delete: 'restrict' }],
    indices: [{ name: 'project_code_unique', entity: 'project', fields: ['code'], unique: true }],
    discovery_facets: FACETS.map(([entity, field]) => ({ entity, field })),
    ...(evolved ? { migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['add note.summary'] }] } : {}),
  };
}

/** A small deterministic generator, one per operation and one for ids. */
function prng(seed: number) {
  const next = seededRandom(seed);
  const int = (n: number) => Math.floor(next() * n);
  return {
    int,
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[int(items.length)] as T,
  };
}
type Rng = ReturnType<typeof prng>;

/** Random (not creation-ordered) v4 ids, so ascending id order is not insertion order. */
function randomIds(seed: number): () => string {
  const rng = prng(seed);
  return () => {
    const hex = Array.from({ length: 32 }, () => '0123456789abcdef'[rng.int(16)]).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[rng.int(4)]}${hex.slice(17, 20)}-${hex.slice(20)}`;
  };
}

const micros = (timestamp: string): bigint => {
  const match = /^(.*?)(?:\.(\d{6}))?Z$/.exec(timestamp);
  if (!match) throw new Error(`not a timestamp: ${timestamp}`);
  return BigInt(Date.parse(`${match[1]}Z`)) * 1000n + BigInt(match[2] ?? '0');
};

/** Canonical text of a request with integers and floats told apart (1 vs 1.0), object keys sorted. */
function canonical(value: JsonValue | undefined): string {
  if (value === undefined) return 'u';
  if (typeof value === 'bigint') return `i${value}`;
  if (typeof value === 'number') return `f${value}`;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  return `{${Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
    .join(',')}}`;
}

/** Facet value order: numbers numerically, false before true, strings by code point. */
function ascending(a: JsonValue, b: JsonValue): number {
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) return Number(a) - Number(b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const [x, y] = [[...String(a)].map((c) => c.codePointAt(0) as number), [...String(b)].map((c) => c.codePointAt(0) as number)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
  return x.length - y.length;
}

const trimmed = (value: JsonValue): JsonValue => (typeof value === 'string' ? value.trim() : Array.isArray(value) ? value.map(trimmed) : value);
const byId = <T extends { id: string }>(a: T, b: T) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

interface ModelRecord {
  entity: Entity;
  id: string;
  version: bigint;
  /** The complete field set as stored (untrimmed, number fields as floats). */
  fields: Fields;
  createdAt: string;
  updatedAt: string;
}

interface ModelEvent {
  entity: Entity;
  id: string;
  version: bigint;
  kind: string;
  before: Fields | null;
  after: Fields | null;
  /** Adopted from the first read, then held fixed. */
  occurredAt?: string;
}

interface ModelBranch {
  id: string;
  slug: string;
  title: string;
  intent: string;
  type: string | null;
  parentId: string | null;
  status: Status;
  summary: string | null;
  createdAt: string;
  updatedAt: string;
  revision: bigint;
}

/** The contract's view of one service: what every answer must agree with. */
class Model {
  /** The declared domain fields per entity, ascending; an evolve appends one. */
  readonly fields: Record<Entity, string[]> = { note: [...FIELDS.note], project: [...FIELDS.project] };
  schemaVersion = 1n;
  readonly records = new Map<string, ModelRecord>();
  readonly deleted = new Map<string, Entity>();
  readonly events: ModelEvent[] = [];
  readonly branches = new Map<string, ModelBranch>();
  /** record id -> branch id -> role */
  readonly members = new Map<string, Map<string, Role>>();
  readonly ledger = new Map<string, { op: string; fingerprint: string; result: JsonObject }>();

  live(entity?: Entity): ModelRecord[] {
    return [...this.records.values()].filter((record) => entity === undefined || record.entity === entity).sort(byId);
  }

  document(record: ModelRecord): JsonObject {
    return {
      entity_name: record.entity,
      id: record.id,
      record_version: record.version,
      created_at: record.createdAt,
      updated_at: record.updatedAt,
      created_via: 'mcp',
      fields: Model.projected(record.fields),
    };
  }

  static projected(fields: Fields): JsonObject {
    return Object.fromEntries(Object.keys(fields).sort().map((name) => [name, trimmed(fields[name] as JsonValue)]));
  }

  /** The complete stored field set of a create: absent fields null, number fields as floats. */
  complete(entity: Entity, record: JsonObject): Fields {
    return Object.fromEntries(this.fields[entity].map((name) => [name, Model.normalised(name, record[name] ?? null)]));
  }

  static normalised(name: string, value: JsonValue): JsonValue {
    return name === 'confidence' && typeof value === 'bigint' ? Number(value) : value;
  }

  branchDocument(branch: ModelBranch): JsonObject {
    return {
      id: branch.id,
      slug: branch.slug,
      title: branch.title,
      intent: branch.intent,
      type: branch.type,
      parent_id: branch.parentId,
      status: branch.status,
      retrieval_summary: branch.summary,
      created_at: branch.createdAt,
      updated_at: branch.updatedAt,
      branch_revision: branch.revision,
    };
  }

  role(recordId: string, branchId: string): Role | undefined {
    return this.members.get(recordId)?.get(branchId);
  }

  primaryOf(recordId: string): string | undefined {
    for (const [branchId, role] of this.members.get(recordId) ?? []) if (role === 'primary') return branchId;
    return undefined;
  }

  inScope(record: ModelRecord, scope: { branchId: string; role: Role } | null): boolean {
    return scope === null || this.role(record.id, scope.branchId) === scope.role;
  }

  matches(record: ModelRecord, filters: JsonObject): boolean {
    return Object.entries(filters).every(([name, wanted]) => {
      const stored = record.fields[name] ?? null;
      if (Array.isArray(stored)) return stored.includes(wanted as string);
      if (typeof stored === 'number' || typeof stored === 'bigint') return (typeof wanted === 'number' || typeof wanted === 'bigint') && Number(stored) === Number(wanted);
      return stored !== null && stored === wanted;
    });
  }

  /** A constraint a write of `fields` to `entity` would break (relationship target, unique code), ignoring record `self`. */
  breaksConstraint(entity: Entity, fields: Fields, self: string | null): boolean {
    if (entity === 'note') {
      const target = fields['project_id'];
      return typeof target === 'string' && this.records.get(target)?.entity !== 'project';
    }
    const code = fields['code'];
    return code !== null && this.live('project').some((project) => project.id !== self && project.fields['code'] === code);
  }

  referenced(record: ModelRecord): boolean {
    return record.entity === 'project' && this.live('note').some((note) => note.fields['project_id'] === record.id);
  }

  addEvent(record: ModelRecord, kind: string, before: Fields | null, after: Fields | null): void {
    this.events.push({ entity: record.entity, id: record.id, version: record.version, kind, before, after });
  }

  eventDocument(event: ModelEvent): JsonObject {
    return {
      entity_name: event.entity,
      id: event.id,
      record_version: event.version,
      kind: event.kind,
      occurred_at: event.occurredAt ?? '(unread)',
      before: event.before === null ? null : { fields: Model.projected(event.before) },
      after: event.after === null ? null : { fields: Model.projected(event.after) },
    };
  }

  isDescendantOrSelf(candidate: string, ancestor: string): boolean {
    let current: string | null = candidate;
    for (let steps = 0; current !== null && steps <= this.branches.size; steps++) {
      if (current === ancestor) return true;
      current = this.branches.get(current)?.parentId ?? null;
    }
    return false;
  }
}

type Mutation =
  | { kind: 'create'; command: CreateRecordCommand; invalid: boolean }
  | { kind: 'update'; command: UpdateRecordCommand; invalid: boolean }
  | { kind: 'delete'; command: DeleteRecordCommand; invalid: boolean }
  | { kind: 'branch_create'; command: CreateBranchCommand; invalid: boolean }
  | { kind: 'branch_update'; command: UpdateBranchCommand; invalid: boolean }
  | { kind: 'assign'; command: AssignRecordsCommand; invalid: boolean };

type Outcome = { code: string } | { ok: (result: JsonObject) => void };

const OPERATIONS = [
  'create',
  'create',
  'create',
  'create',
  'update',
  'update',
  'update',
  'delete',
  'get',
  'list',
  'search',
  'history',
  'branch_create',
  'branch_create',
  'branch_update',
  'branch_update',
  'branch_list',
  'assign',
  'assign',
  'assign',
  'assign',
  'assign',
  'retry',
  'changed',
  'equivalent_create',
  'near_retry',
  'invalid_under_used_key',
  'summary',
  'unbranched',
  'restart',
  'evolve',
  'other_principal',
] as const;
type Operation = (typeof OPERATIONS)[number];

interface Step {
  readonly operation: Operation;
  readonly seed: number;
}

/** One walk: a fresh service, an application with random ids, and the model beside it. */
class Walk {
  readonly model = new Model();
  readonly sent: Mutation[] = [];
  /** Records an effective assignment changed, with their updated_at before it. */
  private readonly pendingTimes = new Map<string, string>();
  private keys = 0;
  private slugs = 0;

  constructor(
    public app: Application,
    readonly serviceId: string,
    /** Closes the storage and opens it again under a new application, as a restarted process would. */
    private readonly reopen: () => Promise<Application>,
    private readonly stranger: () => Application,
  ) {}

  key(): string {
    return `model-key-${++this.keys}`;
  }

  async attempt(call: () => Promise<JsonObject>): Promise<{ result: JsonObject } | { code: string }> {
    try {
      return { result: await call() };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string') throw error;
      return { code };
    }
  }

  async expectCode(call: () => Promise<JsonObject>, code: string): Promise<void> {
    const answer = await this.attempt(call);
    expect(answer).toEqual({ code });
  }

  // ---- mutations through the ledger (§6.4) ----

  fingerprint(mutation: Mutation): string {
    switch (mutation.kind) {
      case 'create': {
        const { entityName, record } = mutation.command;
        return canonical({ entityName, fields: this.model.complete(entityName as Entity, record) });
      }
      case 'update': {
        const { entityName, recordId, expectedRecordVersion, updates } = mutation.command;
        return canonical({ entityName, recordId, expectedRecordVersion, updates });
      }
      case 'delete': {
        const { entityName, recordId, expectedRecordVersion } = mutation.command;
        return canonical({ entityName, recordId, expectedRecordVersion });
      }
      case 'branch_create': {
        const { slug, title, intent, branchType, parentBranchId, retrievalSummary } = mutation.command;
        return canonical({ slug, title, intent, branchType, parentBranchId, retrievalSummary });
      }
      case 'branch_update': {
        const { branchId, expectedBranchRevision, updates } = mutation.command;
        return canonical({ branchId, expectedBranchRevision, updates: { ...updates } as JsonObject });
      }
      case 'assign': {
        const { branchId, role, operation, records } = mutation.command;
        return canonical({ branchId, role, operation, records: records.map((target) => ({ ...target })) as JsonValue[] });
      }
    }
  }

  async mutate(mutation: Mutation): Promise<void> {
    this.sent.push(mutation);
    const answer = await this.attempt(() => this.call(mutation));
    if (mutation.invalid) {
      // Validation against the manifest comes before the ledger.
      expect(answer).toEqual({ code: 'validation_failed' });
      return;
    }
    const key = mutation.command.idempotencyKey;
    const fingerprint = this.fingerprint(mutation);
    const stored = this.model.ledger.get(key);
    if (stored) {
      if (stored.op === mutation.kind && stored.fingerprint === fingerprint) expect(answer).toEqual({ result: { ...stored.result, replayed: true } });
      else expect(answer).toEqual({ code: 'changed_fingerprint' });
      return;
    }
    const outcome = this.decide(mutation);
    if ('code' in outcome) {
      expect(answer).toEqual({ code: outcome.code });
      return;
    }
    if (!('result' in answer)) throw new Error(`expected success, got ${answer.code}`);
    expect(answer.result['replayed']).toBe(false);
    outcome.ok(answer.result);
    this.model.ledger.set(key, { op: mutation.kind, fingerprint, result: answer.result });
    if (mutation.kind === 'assign') await this.adoptAssignTimes();
  }

  call(mutation: Mutation): Promise<JsonObject> {
    switch (mutation.kind) {
      case 'create':
        return this.app.records.create(mutation.command);
      case 'update':
        return this.app.records.update(mutation.command);
      case 'delete':
        return this.app.records.delete(mutation.command);
      case 'branch_create':
        return this.app.branches.create(mutation.command);
      case 'branch_update':
        return this.app.branches.update(mutation.command);
      case 'assign':
        return this.app.branches.assign(mutation.command);
    }
  }

  /** What the contract says a first (non-replayed) completion of a valid request does. */
  decide(mutation: Mutation): Outcome {
    const model = this.model;
    switch (mutation.kind) {
      case 'create': {
        const entity = mutation.command.entityName as Entity;
        const fields = this.model.complete(entity, mutation.command.record);
        if (model.breaksConstraint(entity, fields, null)) return { code: 'constraint_violation' };
        return {
          ok: (result) => {
            const document = result['record'] as JsonObject;
            const id = document['id'] as string;
            expect(model.records.has(id) || model.deleted.has(id)).toBe(false);
            expect(document['created_at']).toBe(document['updated_at']);
            const record: ModelRecord = { entity, id, version: 1n, fields, createdAt: document['created_at'] as string, updatedAt: document['updated_at'] as string };
            expect(result).toEqual({ record: model.document(record), replayed: false });
            model.records.set(id, record);
            model.addEvent(record, 'create', null, fields);
          },
        };
      }
      case 'update': {
        const { entityName, recordId, expectedRecordVersion, updates } = mutation.command;
        const current = model.records.get(recordId);
        if (!current || current.entity !== entityName) return { code: 'not_found' };
        if (current.version !== expectedRecordVersion) return { code: 'stale_record_version' };
        const merged = { ...current.fields };
        for (const [name, value] of Object.entries(updates)) merged[name] = Model.normalised(name, value);
        if (model.breaksConstraint(current.entity, merged, current.id)) return { code: 'constraint_violation' };
        return {
          ok: (result) => {
            const document = result['record'] as JsonObject;
            expect(micros(document['updated_at'] as string)).toBeGreaterThan(micros(current.updatedAt));
            const before = current.fields;
            const next: ModelRecord = { ...current, version: current.version + 1n, fields: merged, updatedAt: document['updated_at'] as string };
            expect(result).toEqual({ record: model.document(next), replayed: false });
            model.records.set(recordId, next);
            model.addEvent(next, 'update', before, merged);
          },
        };
      }
      case 'delete': {
        const { entityName, recordId, expectedRecordVersion } = mutation.command;
        const current = model.records.get(recordId);
        if (!current || current.entity !== entityName) return { code: 'not_found' };
        if (current.version !== expectedRecordVersion) return { code: 'stale_record_version' };
        if (model.referenced(current)) return { code: 'constraint_violation' };
        return {
          ok: (result) => {
            expect(result).toEqual({ id: recordId, record_version: current.version + 1n, replayed: false });
            model.records.delete(recordId);
            model.deleted.set(recordId, current.entity);
            model.members.delete(recordId);
            model.addEvent({ ...current, version: current.version + 1n }, 'delete', current.fields, null);
          },
        };
      }
      case 'branch_create': {
        const command = mutation.command;
        if (command.parentBranchId !== null && !model.branches.has(command.parentBranchId)) return { code: 'not_found' };
        if ([...model.branches.values()].some((branch) => branch.slug === command.slug)) return { code: 'already_exists' };
        return {
          ok: (result) => {
            const document = result['branch'] as JsonObject;
            const id = document['id'] as string;
            expect(model.branches.has(id)).toBe(false);
            const branch: ModelBranch = {
              id,
              slug: command.slug,
              title: command.title,
              intent: command.intent,
              type: command.branchType,
              parentId: command.parentBranchId,
              status: 'active',
              summary: command.retrievalSummary,
              createdAt: document['created_at'] as string,
              updatedAt: document['created_at'] as string,
              revision: 1n,
            };
            expect(result).toEqual({ branch: model.branchDocument(branch), replayed: false });
            model.branches.set(id, branch);
          },
        };
      }
      case 'branch_update': {
        const { branchId, expectedBranchRevision, updates } = mutation.command;
        const current = model.branches.get(branchId);
        if (!current) return { code: 'not_found' };
        if (current.revision !== expectedBranchRevision) return { code: 'stale_branch_revision' };
        const parentId = updates.parentBranchId === undefined ? current.parentId : updates.parentBranchId;
        if (parentId !== null && parentId !== current.parentId) {
          if (parentId === branchId) return { code: 'constraint_violation' };
          if (!model.branches.has(parentId)) return { code: 'not_found' };
          if (model.isDescendantOrSelf(parentId, branchId)) return { code: 'constraint_violation' };
        }
        const next: ModelBranch = {
          ...current,
          title: updates.title ?? current.title,
          intent: updates.intent ?? current.intent,
          type: updates.branchType === undefined ? current.type : updates.branchType,
          parentId,
          status: updates.status ?? current.status,
          summary: updates.retrievalSummary === undefined ? current.summary : updates.retrievalSummary,
        };
        const changed = (['title', 'intent', 'type', 'parentId', 'status', 'summary'] as const).some((name) => next[name] !== current[name]);
        return {
          ok: (result) => {
            if (!changed) {
              expect(result).toEqual({ branch: model.branchDocument(current), replayed: false });
              return;
            }
            const document = result['branch'] as JsonObject;
            expect(micros(document['updated_at'] as string)).toBeGreaterThan(micros(current.updatedAt));
            const updated: ModelBranch = { ...next, revision: current.revision + 1n, updatedAt: document['updated_at'] as string };
            expect(result).toEqual({ branch: model.branchDocument(updated), replayed: false });
            model.branches.set(branchId, updated);
          },
        };
      }
      case 'assign': {
        const { branchId, role, operation, records } = mutation.command;
        const branch = model.branches.get(branchId);
        if (!branch) return { code: 'not_found' };
        if (operation === 'assign' && branch.status !== 'active') return { code: 'constraint_violation' };
        for (const target of records) {
          const record = model.records.get(target.recordId);
          if (!record || record.entity !== target.entityName) return { code: 'not_found' };
          if (record.version !== target.expectedRecordVersion) return { code: 'stale_record_version' };
        }
        return {
          ok: (result) => {
            const versions: JsonObject[] = [];
            for (const target of records) {
              const record = model.records.get(target.recordId) as ModelRecord;
              const kind = this.delta(record.id, branchId, role, operation);
              if (kind !== null) {
                const next = { ...record, version: record.version + 1n };
                model.records.set(record.id, next);
                model.addEvent(next, kind, record.fields, record.fields);
                this.pendingTimes.set(record.id, record.updatedAt);
              }
              versions.push({ entity_name: record.entity, id: record.id, record_version: (model.records.get(record.id) as ModelRecord).version });
            }
            expect(result).toEqual({ records: versions, replayed: false });
          },
        };
      }
    }
  }

  /** The membership delta table of §7.5: applies it to the model and names the event, or null for a no-op. */
  delta(recordId: string, branchId: string, role: Role, operation: 'assign' | 'unassign'): string | null {
    const memberships = this.model.members.get(recordId) ?? new Map<string, Role>();
    this.model.members.set(recordId, memberships);
    const here = memberships.get(branchId);
    if (operation === 'unassign') {
      if (here !== role) return null;
      memberships.delete(branchId);
      return `${role}_unassign`;
    }
    if (role === 'related') {
      if (here !== undefined) return null;
      memberships.set(branchId, 'related');
      return 'related_assign';
    }
    if (here === 'primary') return null;
    const previous = this.model.primaryOf(recordId);
    if (previous !== undefined) memberships.delete(previous);
    memberships.set(branchId, 'primary');
    return previous === undefined ? 'primary_assign' : 'primary_move';
  }

  /** An effective assignment moves the record's updated_at forward and leaves everything else of it alone. */
  async adoptAssignTimes(): Promise<void> {
    for (const [id, before] of this.pendingTimes) {
      const record = this.model.records.get(id) as ModelRecord;
      const document = await this.app.records.get(this.serviceId, record.entity, id);
      expect(micros(document['updated_at'] as string)).toBeGreaterThan(micros(before));
      record.updatedAt = document['updated_at'] as string;
      expect(document).toEqual(this.model.document(record));
    }
    this.pendingTimes.clear();
  }

  // ---- generators of requests ----

  anyRecord(rng: Rng, entity?: Entity, liveShare = 0.85): { entity: Entity; id: string } {
    const live = this.model.live(entity);
    const gone = [...this.model.deleted].filter(([, deletedEntity]) => entity === undefined || deletedEntity === entity);
    if (live.length > 0 && rng.chance(liveShare)) {
      const record = rng.pick(live);
      return { entity: record.entity, id: record.id };
    }
    if (gone.length > 0 && rng.chance(0.6)) {
      const [id, deletedEntity] = rng.pick(gone);
      return { entity: deletedEntity, id };
    }
    return { entity: entity ?? rng.pick(ENTITIES), id: MISSING };
  }

  /** The record's current version, or now and then a stale one (any version for a record that is gone). */
  expectedVersion(rng: Rng, current: ModelRecord | undefined, rightShare: number): bigint {
    if (!current) return BigInt(1 + rng.int(3));
    return rng.chance(rightShare) ? current.version : current.version + BigInt(rng.chance(0.5) && current.version > 1n ? -1 : 1);
  }

  anyBranchId(rng: Rng): string {
    const branches = [...this.model.branches.keys()];
    return branches.length > 0 && rng.chance(0.9) ? rng.pick(branches) : MISSING;
  }

  noteValue(rng: Rng, name: string): JsonValue {
    switch (name) {
      case 'title':
        return rng.pick(['alpha', 'beta', 'beta ', '  gamma  ']);
      case 'status':
        return rng.pick(['draft', 'complete', 'superseded']);
      case 'priority':
        return rng.pick([0n, 2n, 10n, -3n]);
      case 'pinned':
        return rng.chance(0.5);
      case 'confidence':
        return rng.pick([0.25, 1n, 1, 2.5, 10]);
      case 'tags':
        // Ties in a facet are ordered by value: code points, not a locale ('10' < '2' < 'Z' < 'x' < 'é').
        return TAGS.filter(() => rng.chance(0.35));
      case 'project_id': {
        const projects = this.model.live('project');
        if (projects.length > 0 && rng.chance(0.8)) return rng.pick(projects).id;
        return rng.chance(0.5) && this.model.deleted.size > 0 ? rng.pick([...this.model.deleted.keys()]) : MISSING;
      }
      case 'name':
        return rng.pick(['P', 'Q']);
      case 'code':
        return rng.pick(['c1', 'c2', 'c3', 'c4']);
      case EVOLVED_FIELD:
        return rng.pick(['s1', ' s2 ']);
      default:
        throw new Error(name);
    }
  }

  /** A record for `entity`: mostly valid (required fields present), sometimes invalid in a way the manifest rejects. */
  recordFor(rng: Rng, entity: Entity): { record: JsonObject; invalid: boolean } {
    const record: JsonObject = {};
    for (const name of this.model.fields[entity]) {
      if (name === 'title' || name === 'name') record[name] = this.noteValue(rng, name);
      else if (rng.chance(0.5)) record[name] = rng.chance(0.15) ? null : this.noteValue(rng, name);
    }
    if (!rng.chance(0.1)) return { record, invalid: false };
    // [field, value]; undefined leaves the field out.
    const [name, value] = rng.pick<[string, JsonValue | undefined]>(
      entity === 'note'
        ? [['title', undefined], ['status', 'bogus'], ['priority', '1'], ['priority', 1.5], ['pinned', 1n], ['tags', ['x', 'x']], ['nope', 1n], ['title', null]]
        : [['name', undefined], ['code', 5n], ['nope', 'x']],
    );
    const invalidRecord: JsonObject = { ...record };
    if (value === undefined) delete invalidRecord[name];
    else invalidRecord[name] = value;
    return { record: invalidRecord, invalid: true };
  }

  createMutation(rng: Rng, entity: Entity = rng.chance(0.7) ? 'note' : 'project', idempotencyKey = this.key()): Mutation {
    const { record, invalid } = this.recordFor(rng, entity);
    return { kind: 'create', command: { serviceId: this.serviceId, entityName: entity, record, idempotencyKey }, invalid };
  }

  updateMutation(rng: Rng, idempotencyKey = this.key()): Mutation {
    const target = this.anyRecord(rng);
    const current = this.model.records.get(target.id);
    const version = this.expectedVersion(rng, current, 0.8);
    const names = this.model.fields[target.entity].filter(() => rng.chance(0.4));
    const updates: JsonObject = {};
    for (const name of names.length > 0 ? names : [rng.pick(this.model.fields[target.entity])]) {
      const required = name === 'title' || name === 'name';
      updates[name] = !required && rng.chance(0.2) ? null : this.noteValue(rng, name);
    }
    let invalid = false;
    if (rng.chance(0.08)) {
      invalid = true;
      const [name, value] = rng.pick<[string, JsonValue]>(
        target.entity === 'note'
          ? [['title', null], ['status', 'bogus'], ['nope', 1n], ['priority', 1.5], ['tags', ['x', 'x']]]
          : [['name', null], ['code', true]],
      );
      updates[name] = value;
    }
    return { kind: 'update', command: { serviceId: this.serviceId, entityName: target.entity, recordId: target.id, updates, expectedRecordVersion: version, idempotencyKey }, invalid };
  }

  deleteMutation(rng: Rng, idempotencyKey = this.key()): Mutation {
    const target = this.anyRecord(rng);
    const current = this.model.records.get(target.id);
    const version = this.expectedVersion(rng, current, 0.8);
    return { kind: 'delete', command: { serviceId: this.serviceId, entityName: target.entity, recordId: target.id, expectedRecordVersion: version, idempotencyKey }, invalid: false };
  }

  branchCreateMutation(rng: Rng, idempotencyKey = this.key()): Mutation {
    const existing = [...this.model.branches.values()];
    const slug = existing.length > 0 && rng.chance(0.15) ? rng.pick(existing).slug : `topic-${++this.slugs}`;
    const parentBranchId = rng.chance(0.4) ? this.anyBranchId(rng) : null;
    return {
      kind: 'branch_create',
      command: {
        serviceId: this.serviceId,
        slug,
        title: rng.pick(['Topic', 'Thread']),
        intent: 'Why it exists.',
        branchType: rng.pick([null, 'thread', 'area']),
        parentBranchId,
        retrievalSummary: rng.pick([null, 'Summary.']),
        idempotencyKey,
      },
      invalid: false,
    };
  }

  branchUpdateMutation(rng: Rng, idempotencyKey = this.key()): Mutation {
    const branchId = this.anyBranchId(rng);
    const current = this.model.branches.get(branchId);
    const revision = current && rng.chance(0.85) ? current.revision : BigInt(1 + rng.int(3));
    const updates: { -readonly [K in keyof UpdateBranchCommand['updates']]: UpdateBranchCommand['updates'][K] } = {};
    if (rng.chance(0.4)) updates.title = rng.pick(['Topic', 'Thread', 'Renamed']);
    if (rng.chance(0.4)) updates.status = rng.pick(['active', 'archived', 'superseded'] as const);
    if (rng.chance(0.3)) updates.branchType = rng.pick([null, 'thread', 'area']);
    if (rng.chance(0.3)) updates.retrievalSummary = rng.pick([null, 'Summary.', 'Other.']);
    if (rng.chance(0.35)) updates.parentBranchId = rng.chance(0.2) ? null : rng.chance(0.15) ? branchId : this.anyBranchId(rng);
    if (Object.keys(updates).length === 0) updates.status = rng.pick(['active', 'archived'] as const);
    return { kind: 'branch_update', command: { serviceId: this.serviceId, branchId, expectedBranchRevision: revision, updates, idempotencyKey }, invalid: false };
  }

  assignMutation(rng: Rng, idempotencyKey = this.key()): Mutation {
    const operation = rng.chance(0.7) ? 'assign' : 'unassign';
    const role: Role = rng.chance(0.5) ? 'primary' : 'related';
    let branchId = this.anyBranchId(rng);
    // An unassign mostly names a branch that holds memberships, and its members.
    const held = [...this.model.members].flatMap(([recordId, roles]) => [...roles].map(([branch, heldRole]) => ({ recordId, branch, heldRole })));
    if (operation === 'unassign' && held.length > 0 && rng.chance(0.8)) branchId = rng.pick(held).branch;
    const members = held.filter((membership) => membership.branch === branchId && (membership.heldRole === role || rng.chance(0.3)));
    const count = 1 + rng.int(3);
    const targets: AssignRecordsCommand['records'][number][] = [];
    let invalid = false;
    for (let i = 0; i < count * 2 && targets.length < count; i++) {
      const member = members.length > 0 && rng.chance(0.7) ? rng.pick(members) : undefined;
      const memberRecord = member ? this.model.records.get(member.recordId) : undefined;
      const target = memberRecord ? { entity: memberRecord.entity, id: memberRecord.id } : this.anyRecord(rng, undefined, 0.96);
      if (targets.some((existing) => existing.recordId === target.id && existing.entityName === target.entity)) continue;
      const current = this.model.records.get(target.id);
      const version = this.expectedVersion(rng, current, 0.95);
      // Now and then a target in the wrong entity (not_found) or an undeclared one (validation_failed).
      let entityName: string = target.entity;
      if (rng.chance(0.04)) entityName = target.entity === 'note' ? 'project' : 'note';
      if (rng.chance(0.02)) {
        entityName = 'nothing';
        invalid = true;
      }
      targets.push({ entityName, recordId: target.id, expectedRecordVersion: version });
    }
    return {
      kind: 'assign',
      command: {
        serviceId: this.serviceId,
        branchId,
        role,
        operation,
        records: targets,
        idempotencyKey,
      },
      invalid,
    };
  }

  anyMutation(rng: Rng, idempotencyKey: string): Mutation {
    switch (rng.int(6)) {
      case 0:
        return this.createMutation(rng, undefined, idempotencyKey);
      case 1:
        return this.updateMutation(rng, idempotencyKey);
      case 2:
        return this.deleteMutation(rng, idempotencyKey);
      case 3:
        return this.branchCreateMutation(rng, idempotencyKey);
      case 4:
        return this.branchUpdateMutation(rng, idempotencyKey);
      default:
        return this.assignMutation(rng, idempotencyKey);
    }
  }

  // ---- reads ----

  /** Walks every page with random limits; an insert between pages must not disturb keyset paging. */
  async walkRecords(rng: Rng, entity: Entity, filters: JsonObject | undefined, branch: { branchId: string; role: Role } | null): Promise<void> {
    let cursor: string | null = null;
    let lastId = '';
    let pages = 0;
    const seen: string[] = [];
    do {
      const limit = 1 + rng.int(4);
      const page: JsonObject = await this.app.records.list({ serviceId: this.serviceId, entityName: entity, limit, cursor, branch, ...(filters ? { filters } : {}) });
      const remaining = this.model.live(entity).filter((record) => record.id > lastId && this.model.inScope(record, branch) && (!filters || this.model.matches(record, filters)));
      const expected = remaining.slice(0, limit);
      expect(page['records']).toEqual(expected.map((record) => this.model.document(record)));
      expect(page['next_cursor'] === null).toBe(remaining.length <= limit);
      seen.push(...expected.map((record) => record.id));
      cursor = page['next_cursor'] as string | null;
      lastId = expected[expected.length - 1]?.id ?? lastId;
      if (cursor !== null && pages === 0 && rng.chance(0.3)) {
        // The same cursor under another query is refused (§6.12).
        const variants: Omit<ListRecordsCommand, 'serviceId' | 'limit' | 'cursor'>[] = [
          { entityName: entity, branch, ...(filters ? {} : { filters: { [entity === 'note' ? 'title' : 'name']: 'alpha' } }) },
          { entityName: entity === 'note' ? 'project' : 'note', branch, ...(filters ? { filters: entity === 'note' ? { name: 'P' } : { status: 'draft' } } : {}) },
          { entityName: entity, branch: branch === null ? { branchId: MISSING, role: 'primary' } : { ...branch, role: branch.role === 'primary' ? 'related' : 'primary' }, ...(filters ? { filters } : {}) },
          ...(filters ? [{ entityName: entity, branch, filters: { ...filters, [Object.keys(filters)[0] as string]: 'another value' } }] : []),
        ];
        const other = rng.pick(variants);
        await this.expectCode(() => this.app.records.list({ serviceId: this.serviceId, limit, cursor, ...other }), 'validation_failed');
      }
      // Writes between pages (keyset paging stays exact), and now and then a restart the cursor survives.
      if (cursor !== null && pages === 0 && rng.chance(0.4)) await this.mutate(rng.chance(0.5) ? this.createMutation(rng, entity) : this.anyMutation(rng, this.key()));
      if (cursor !== null && pages === 0 && rng.chance(0.1)) this.app = await this.reopen();
      pages++;
    } while (cursor !== null);
    expect([...seen].sort()).toEqual(seen);
  }

  filtersFor(rng: Rng, entity: Entity): JsonObject {
    const filters: JsonObject = {};
    const names = entity === 'note' ? ['title', 'status', 'priority', 'pinned', 'confidence', 'tags', 'project_id'] : ['name', 'code'];
    const count = 1 + rng.int(2);
    for (let i = 0; i < count; i++) {
      const name = rng.pick(names);
      if (name === 'tags') filters[name] = rng.pick(TAGS);
      else if (name === 'status') filters[name] = rng.pick(['draft', 'complete', 'superseded', 'not-allowed-but-fine']);
      else if (name === 'title') filters[name] = rng.pick(['alpha', 'beta', 'beta ', '  gamma  ', 'gamma']);
      else filters[name] = this.noteValue(rng, name);
    }
    return filters;
  }

  scope(rng: Rng): { branchId: string; role: Role } | null {
    return rng.chance(0.4) ? { branchId: this.anyBranchId(rng), role: rng.chance(0.5) ? 'primary' : 'related' } : null;
  }

  async get(rng: Rng): Promise<void> {
    const target = this.anyRecord(rng);
    // Now and then the id under the other entity: not_found (§6.6).
    const entity = rng.chance(0.1) ? (target.entity === 'note' ? 'project' : 'note') : target.entity;
    const record = this.model.records.get(target.id);
    const answer = await this.attempt(() => this.app.records.get(this.serviceId, entity, target.id));
    if (record && record.entity === entity) expect(answer).toEqual({ result: this.model.document(record) });
    else expect(answer).toEqual({ code: 'not_found' });
  }

  async history(rng: Rng): Promise<void> {
    const whole = rng.chance(0.4);
    const target = this.anyRecord(rng);
    // A record id under the other entity names no history of that entity: an empty walk.
    const entity = whole || rng.chance(0.1) ? rng.pick(ENTITIES) : target.entity;
    const recordId = whole ? null : target.id;
    const expected = () => this.model.events.filter((event) => event.entity === entity && (recordId === null || event.id === recordId));
    const events: JsonObject[] = [];
    let cursor: string | null = null;
    do {
      const limit = 1 + rng.int(5);
      const page: JsonObject = await this.app.records.history({ serviceId: this.serviceId, entityName: entity, recordId, limit, cursor });
      events.push(...(page['events'] as JsonObject[]));
      cursor = page['next_cursor'] as string | null;
      expect(cursor === null).toBe(events.length >= expected().length);
      if (cursor !== null && rng.chance(0.2)) {
        // Events written behind the cursor show up on later pages.
        if (rng.chance(0.5)) await this.mutate(this.anyMutation(rng, this.key()));
        else await this.expectCode(() => this.app.records.list({ serviceId: this.serviceId, entityName: entity, limit, cursor, branch: null }), 'validation_failed');
      }
    } while (cursor !== null);
    const all = expected();
    expect(events.length).toBe(all.length);
    all.forEach((event, index) => {
      event.occurredAt ??= (events[index] as JsonObject)['occurred_at'] as string;
    });
    expect(events).toEqual(all.map((event) => this.model.eventDocument(event)));
    // One record's history never goes back in time (decisions D22).
    const last = new Map<string, bigint>();
    for (const event of all) {
      const at = micros(event.occurredAt as string);
      expect(at).toBeGreaterThanOrEqual(last.get(event.id) ?? 0n);
      last.set(event.id, at);
    }
  }

  /** Another principal over the same storage sees nothing of this service (§1, §6.1). */
  async otherPrincipal(rng: Rng): Promise<void> {
    const stranger = this.stranger();
    const target = this.anyRecord(rng);
    await this.expectCode(() => stranger.records.get(this.serviceId, target.entity, target.id), 'not_found');
    await this.expectCode(() => stranger.records.list({ serviceId: this.serviceId, entityName: target.entity, limit: 5, cursor: null, branch: null }), 'not_found');
    await this.expectCode(() => stranger.records.create({ serviceId: this.serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: this.key() }), 'not_found');
    await this.expectCode(() => stranger.discovery.summary({ serviceId: this.serviceId, sample: 0 }), 'not_found');
  }

  /** The walk's one evolve: note gains a field, null in every record and snapshot; older cursors and create keys go stale (§6.4, §6.12). */
  async evolve(): Promise<void> {
    if (this.model.schemaVersion !== 1n) return;
    const before = await this.app.records.list({ serviceId: this.serviceId, entityName: 'note', limit: 1, cursor: null, branch: null });
    await this.app.lifecycle.evolve({ serviceId: this.serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(modelManifest(true)), idempotencyKey: `e-${this.serviceId}` });
    const model = this.model;
    model.schemaVersion = 2n;
    model.fields.note = [...model.fields.note, EVOLVED_FIELD].sort();
    const widen = (fields: Fields | null): Fields | null => (fields === null ? null : { ...fields, [EVOLVED_FIELD]: null });
    for (const record of model.records.values()) if (record.entity === 'note') record.fields = widen(record.fields) as Fields;
    for (const event of model.events) {
      if (event.entity !== 'note') continue;
      event.before = widen(event.before);
      event.after = widen(event.after);
    }
    const cursor = before['next_cursor'] as string | null;
    if (cursor !== null) await this.expectCode(() => this.app.records.list({ serviceId: this.serviceId, entityName: 'note', limit: 1, cursor, branch: null }), 'validation_failed');
  }

  async branchList(rng: Rng): Promise<void> {
    const status = rng.chance(0.3) ? rng.pick(['active', 'archived', 'superseded'] as const) : null;
    const branchType = rng.chance(0.3) ? rng.pick(['thread', 'area']) : null;
    const parentBranchId = rng.chance(0.3) ? this.anyBranchId(rng) : null;
    const expected = [...this.model.branches.values()]
      .filter((branch) => (status === null || branch.status === status) && (branchType === null || branch.type === branchType) && (parentBranchId === null || branch.parentId === parentBranchId))
      .sort(byId);
    const seen: JsonObject[] = [];
    let cursor: string | null = null;
    do {
      const page: JsonObject = await this.app.branches.list({ serviceId: this.serviceId, status, branchType, parentBranchId, limit: 1 + rng.int(3), cursor });
      seen.push(...(page['branches'] as JsonObject[]));
      cursor = page['next_cursor'] as string | null;
      if (cursor !== null && rng.chance(0.2)) {
        const other = { status: status === 'active' ? 'archived' : 'active', branchType, parentBranchId } as const;
        await this.expectCode(() => this.app.branches.list({ serviceId: this.serviceId, ...other, limit: 1, cursor }), 'validation_failed');
      }
    } while (cursor !== null);
    expect(seen).toEqual(expected.map((branch) => this.model.branchDocument(branch)));
  }

  async summary(rng: Rng): Promise<void> {
    const sample = rng.int(4);
    const summary = await this.app.discovery.summary({ serviceId: this.serviceId, sample });
    const model = this.model;
    const live = model.live();
    const facets = [...FACETS]
      .sort(([e1, f1], [e2, f2]) => (e1 + '.' + f1 < e2 + '.' + f2 ? -1 : 1))
      .map(([entity, field]) => {
        const counts = new Map<string, { value: JsonValue; count: bigint }>();
        for (const record of model.live(entity)) {
          const stored = record.fields[field] ?? null;
          for (const value of Array.isArray(stored) ? stored : stored === null ? [] : [stored]) {
            const slot = counts.get(canonical(value)) ?? { value: trimmed(value), count: 0n };
            slot.count++;
            counts.set(canonical(value), slot);
          }
        }
        const values = [...counts.values()].sort((a, b) => (a.count !== b.count ? (a.count > b.count ? -1 : 1) : ascending(a.value, b.value)));
        return { entity_name: entity, field_name: field, values: values.slice(0, 20) };
      });
    const cards = [...model.branches.values()]
      .sort((a, b) => {
        const at = micros(b.updatedAt) - micros(a.updatedAt);
        return at !== 0n ? (at > 0n ? 1 : -1) : byId(a, b);
      })
      .slice(0, 100)
      .map((branch) => ({
        branch: model.branchDocument(branch),
        primary_record_count: BigInt(live.filter((record) => model.role(record.id, branch.id) === 'primary').length),
        related_record_count: BigInt(live.filter((record) => model.role(record.id, branch.id) === 'related').length),
      }));
    expect({
      record_counts: summary['record_counts'],
      facets: summary['facets'],
      branches: summary['branches'],
      unbranched_record_count: summary['unbranched_record_count'],
      samples: summary['samples'],
    }).toEqual({
      record_counts: ENTITIES.map((entity) => ({ entity_name: entity, count: BigInt(model.live(entity).length) })),
      facets,
      branches: cards,
      unbranched_record_count: BigInt(live.filter((record) => model.primaryOf(record.id) === undefined).length),
      samples: ENTITIES.map((entity) => ({ entity_name: entity, records: model.live(entity).slice(0, sample).map((record) => model.document(record)) })),
    });
  }

  async unbranched(rng: Rng): Promise<void> {
    const entityName = rng.chance(0.3) ? rng.pick(ENTITIES) : null;
    const branchId = rng.chance(0.3) ? this.anyBranchId(rng) : null;
    const limit = rng.chance(0.3) ? 1 + rng.int(5) : 100;
    const scan = await this.app.maintenance.scan({ serviceId: this.serviceId, entityName, branchId, scanTypes: ['unbranched'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit });
    const candidates = ENTITIES.filter((entity) => entityName === null || entity === entityName)
      .flatMap((entity) => this.model.live(entity))
      .filter((record) => this.model.primaryOf(record.id) === undefined && (branchId === null || this.model.role(record.id, branchId) !== undefined))
      .slice(0, limit)
      .map((record) => ({ scan_type: 'unbranched', record: { entity_name: record.entity, id: record.id }, detail: { missing_role: 'primary' } }));
    expect(scan).toEqual({ candidates, unavailable_scan_types: [] });
  }

  /** The whole visible state: every record of every entity and every branch. */
  async fullCheck(): Promise<void> {
    for (const entity of ENTITIES) {
      const page = await this.app.records.list({ serviceId: this.serviceId, entityName: entity, limit: 100, cursor: null, branch: null });
      expect(page).toEqual({ records: this.model.live(entity).map((record) => this.model.document(record)), next_cursor: null });
    }
    const branches = await this.app.branches.list({ serviceId: this.serviceId, status: null, branchType: null, parentBranchId: null, limit: 100, cursor: null });
    expect(branches['branches']).toEqual([...this.model.branches.values()].sort(byId).map((branch) => this.model.branchDocument(branch)));
  }

  // ---- one step ----

  async step({ operation, seed }: Step): Promise<void> {
    const rng = prng(seed);
    switch (operation) {
      case 'create':
        return this.mutate(this.createMutation(rng));
      case 'update':
        return this.mutate(this.updateMutation(rng));
      case 'delete':
        return this.mutate(this.deleteMutation(rng));
      case 'branch_create':
        return this.mutate(this.branchCreateMutation(rng));
      case 'branch_update':
        return this.mutate(this.branchUpdateMutation(rng));
      case 'assign':
        return this.mutate(this.assignMutation(rng));
      case 'get':
        return this.get(rng);
      case 'list':
        return this.walkRecords(rng, rng.pick(ENTITIES), undefined, this.scope(rng));
      case 'search': {
        const entity = rng.chance(0.8) ? 'note' : 'project';
        return this.walkRecords(rng, entity, this.filtersFor(rng, entity), this.scope(rng));
      }
      case 'history':
        return this.history(rng);
      case 'branch_list':
        return this.branchList(rng);
      case 'summary':
        return this.summary(rng);
      case 'unbranched':
        return this.unbranched(rng);
      case 'restart':
        this.app = await this.reopen();
        return;
      case 'other_principal':
        return this.otherPrincipal(rng);
      case 'evolve':
        return this.evolve();
      case 'retry': {
        // The exact request again: a replay if it completed, a fresh attempt if it failed (§6.4).
        if (this.sent.length === 0) return;
        return this.mutate(rng.pick(this.sent));
      }
      case 'changed': {
        // Another (valid or not) request under a key that completed: changed_fingerprint unless it is the same request.
        const used = [...this.model.ledger.keys()];
        if (used.length === 0) return;
        return this.mutate(this.anyMutation(rng, rng.pick(used)));
      }
      case 'equivalent_create': {
        // Explicit nulls for absent fields and 1 for 1.0 in a number field fingerprint alike: a replay.
        const creates = this.sent.filter((mutation): mutation is Extract<Mutation, { kind: 'create' }> => mutation.kind === 'create' && !mutation.invalid);
        if (creates.length === 0) return;
        const original = rng.pick(creates);
        const record: JsonObject = Object.fromEntries(this.model.fields[original.command.entityName as Entity].map((name) => [name, original.command.record[name] ?? null]));
        const confidence = record['confidence'];
        if (typeof confidence === 'bigint') record['confidence'] = Number(confidence);
        else if (typeof confidence === 'number' && Number.isInteger(confidence)) record['confidence'] = BigInt(confidence);
        return this.mutate({ ...original, command: { ...original.command, record } });
      }
      case 'near_retry': {
        // A completed request again with one detail changed that the fingerprint keeps (key order) or does not (1 vs 1.0 in
        // an update, absent vs null in a branch update, target order in an assignment): a replay or changed_fingerprint.
        const completed = this.sent.filter((mutation) => !mutation.invalid && this.model.ledger.has(mutation.command.idempotencyKey));
        if (completed.length === 0) return;
        const original = rng.pick(completed);
        if (original.kind === 'update') {
          const updates: JsonObject = Object.fromEntries(Object.entries(original.command.updates).reverse());
          const confidence = updates['confidence'];
          if (typeof confidence === 'bigint') updates['confidence'] = Number(confidence);
          else if (typeof confidence === 'number' && Number.isInteger(confidence)) updates['confidence'] = BigInt(confidence);
          return this.mutate({ ...original, command: { ...original.command, updates } });
        }
        if (original.kind === 'branch_update') {
          const updates = { ...original.command.updates };
          if (updates.retrievalSummary === undefined) updates.retrievalSummary = null;
          else if (updates.branchType === undefined) updates.branchType = null;
          else updates.parentBranchId ??= null;
          return this.mutate({ ...original, command: { ...original.command, updates } });
        }
        if (original.kind === 'assign') return this.mutate({ ...original, command: { ...original.command, records: [...original.command.records].reverse() } });
        return this.mutate(original);
      }
      case 'invalid_under_used_key': {
        const used = [...this.model.ledger.keys()];
        if (used.length === 0) return;
        const idempotencyKey = rng.pick(used);
        const invalid: Mutation = rng.chance(0.5)
          ? { kind: 'create', command: { serviceId: this.serviceId, entityName: 'nothing', record: { title: 'x' }, idempotencyKey }, invalid: true }
          : { kind: 'update', command: { serviceId: this.serviceId, entityName: 'note', recordId: this.anyRecord(rng, 'note').id, updates: { nope: 1n }, expectedRecordVersion: 1n, idempotencyKey }, invalid: true };
        return this.mutate(invalid);
      }
    }
  }
}

const stepArbitrary: fc.Arbitrary<Step> = fc.record({ operation: fc.constantFrom(...OPERATIONS), seed: fc.nat() });

export function modelSuite(harness: StorageHarness, options: { numRuns?: number } = {}): void {
  describe(`model-based data tools (${harness.name})`, () => {
    let location: StorageLocation;
    let storage: StoragePorts;

    beforeEach(async () => {
      location = await harness.create();
      storage = await location.open();
    });

    afterEach(async () => {
      await storage.close();
      await location.destroy();
    });

    it('agrees with a model of the contract on records, history, cursors, branches, memberships, the ledger, summary and the unbranched scan', async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.nat(), fc.array(stepArbitrary, { minLength: 50, maxLength: 90 }), async (idSeed, steps) => {
          const domainName = `model_${++run}`;
          const clock = manualClock(1_800_000_000_000_000n);
          // Mixed with the run number: two runs with the same seed must not mint the same service id.
          const uuid = randomIds(idSeed ^ Math.imul(run, 0x9e3779b1));
          const open = (principalId = 'agent-model') =>
            createApplication(storage, {
              principalId,
              createdVia: 'mcp',
              nowMicros: () => {
                clock.advance(1n);
                return clock.nowMicros();
              },
              uuid,
              sha256,
            });
          const app = open();
          const serviceId = (await app.lifecycle.seed({ domainName, domainClass: 'knowledge', intentDescription: 'Model walk.', idempotencyKey: `s-${domainName}` }))['service_id'] as string;
          await app.lifecycle.design({ serviceId, manifest: manifest(modelManifest()), idempotencyKey: `d-${domainName}` });
          await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: `m-${domainName}` });
          const walk = new Walk(app, serviceId, async () => {
            await storage.close();
            storage = await location.open();
            return open();
          }, () => open('agent-stranger'));
          // A prelude so that most steps find something to work on.
          const prelude: Step[] = [
            { operation: 'branch_create', seed: idSeed },
            { operation: 'create', seed: idSeed + 1 },
            { operation: 'create', seed: idSeed + 2 },
          ];
          // Registry keys and data keys are separate namespaces (§6.4): the seed's key is fresh for a record create.
          await walk.mutate(walk.createMutation(prng(idSeed), 'note', `s-${domainName}`));
          for (const [index, step] of [...prelude, ...steps].entries()) {
            try {
              await walk.step(step);
              await walk.fullCheck();
            } catch (error) {
              throw new Error(`step ${index} (${step.operation}, seed ${step.seed}): ${(error as Error).message}`, { cause: error });
            }
          }
          await walk.summary(prng(0));
          await walk.unbranched(prng(1));
        }),
        { seed: 1313, numRuns: options.numRuns ?? 10, endOnFailure: true },
      );
    });
  });
}
