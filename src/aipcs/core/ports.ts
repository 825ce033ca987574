// The storage ports: what the application needs from a backend, in domain
// terms. No SQL, file path or driver type crosses these interfaces; each
// adapter (SQLite, PostgreSQL) runs its own transaction around a callback so
// that the rules in core are written once and hold on every backend.

import type { JsonValue } from '../../common/json.js';

/** Microseconds since the Unix epoch. */
export type Micros = bigint;

export type BackendName = 'sqlite' | 'postgresql';

export interface StorageLocator {
  readonly backend: BackendName;
  /** `svc_<32 lowercase hex of the service id>`. */
  readonly namespace: string;
}

export type DesignState = 'seeded' | 'materialised';
export type OperationalStatus = 'active' | 'suspended' | 'archived';

export interface ServiceRow {
  readonly serviceId: string;
  readonly principalId: string;
  readonly domainName: string;
  readonly domainClass: string;
  readonly intentDescription: string;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
  readonly lastActivityAt: Micros;
  /** The normalised manifest document (lossless JSON), or null until designed. */
  readonly manifest: JsonValue | null;
  readonly schemaVersion: number | null;
  readonly designState: DesignState;
  readonly operationalStatus: OperationalStatus;
  readonly serviceRevision: bigint;
  readonly materialisedAt: Micros | null;
  readonly storage: StorageLocator | null;
}

export type ClaimKind = 'seed' | 'design' | 'materialise' | 'evolve' | 'suspend' | 'resume' | 'archive' | 'restore' | 'export' | 'import' | 'purge';
export type ClaimPhase = 'prepared' | 'completed' | 'recovery_required';

/** One idempotency key of the registry ledger, and the durable intent it carries. */
export interface ClaimRow {
  readonly principalId: string;
  readonly idempotencyKey: string;
  readonly kind: ClaimKind;
  readonly fingerprint: string;
  readonly serviceId: string | null;
  readonly phase: ClaimPhase;
  /** What the operation set out to do (enough to resume it after a crash). */
  readonly intent: JsonValue;
  /** The stored result snapshot of a completed operation. */
  readonly result: JsonValue | null;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
}

export interface RegistryReader {
  getService(principalId: string, serviceId: string): Promise<ServiceRow | undefined>;
  findServiceByDomain(principalId: string, domainName: string): Promise<ServiceRow | undefined>;
  /** Ordered by (created_at, service_id) ascending. */
  listServices(principalId: string, limit: number): Promise<ServiceRow[]>;
  getClaim(principalId: string, idempotencyKey: string): Promise<ClaimRow | undefined>;
  /** The prepared or recovery-required claim of a service, if any. */
  getActiveClaim(principalId: string, serviceId: string): Promise<ClaimRow | undefined>;
  /**
   * Whether an import of this principal has reserved the domain name, and
   * whether that import can still finish (`pending`) or its claim is
   * recovery-required (`frozen`: the reservation stays for good).
   */
  domainReservation(principalId: string, domainName: string): Promise<'pending' | 'frozen' | undefined>;
}

export interface RegistryWriter extends RegistryReader {
  insertService(row: ServiceRow): Promise<void>;
  /** Replaces the row; returns false when the stored revision is not `expectedRevision`. */
  updateService(row: ServiceRow, expectedRevision: bigint): Promise<boolean>;
  insertClaim(row: ClaimRow): Promise<void>;
  updateClaim(row: ClaimRow): Promise<void>;
  /** Removes a claim, which frees its key (a prepared claim whose operation did nothing and never will). */
  deleteClaim(principalId: string, idempotencyKey: string): Promise<void>;
}

export interface RegistryPort {
  /** One read-only unit of work over a consistent snapshot. */
  read<T>(work: (tx: RegistryReader) => Promise<T>): Promise<T>;
  /**
   * Where the registry and the service stores share one database
   * (PostgreSQL): a read unit whose `fenceOf` reads a store's write fence in
   * the same snapshot as the registry rows. Absent otherwise: data mutations
   * then read the fence (ServiceStorePort.readFence) before the registry.
   */
  readWithFence?<T>(work: (tx: RegistryReader, fenceOf: (locator: StorageLocator) => Promise<WriteFence>) => Promise<T>): Promise<T>;
  /** One serialised write unit of work; committed when `work` resolves, rolled back when it throws. */
  write<T>(work: (tx: RegistryWriter) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Service stores: the physical layout a manifest asks for.

export type ColumnType = 'text' | 'integer' | 'real' | 'boolean' | 'datetime' | 'uuid' | 'string_list';

export interface ColumnLayout {
  readonly name: string;
  readonly type: ColumnType;
  readonly notNull: boolean;
}

export interface ForeignKeyLayout {
  readonly name: string;
  readonly column: string;
  readonly targetEntity: string;
}

export interface IndexLayout {
  readonly name: string;
  readonly columns: readonly string[];
  readonly unique: boolean;
}

export interface EntityLayout {
  readonly name: string;
  /** Every attribute in manifest order, server-managed ones included. */
  readonly columns: readonly ColumnLayout[];
  readonly foreignKeys: readonly ForeignKeyLayout[];
  readonly indexes: readonly IndexLayout[];
  /** Domain fields filterable by equality; the adapter keeps them indexed. */
  readonly equalityFields: readonly string[];
  /** string_list domain fields; the adapter keeps their members indexed for membership search. */
  readonly listFields: readonly string[];
}

export interface StoreLayout {
  readonly entities: readonly EntityLayout[];
}

export type StoreObservation =
  | { readonly state: 'uninitialised' }
  | { readonly state: 'ready' }
  | { readonly state: 'incompatible' }
  | { readonly state: 'unavailable' };

export interface ServiceStorePort {
  /** How the store's physical layout relates to `layout` (never creates or migrates); contention throws StorageFailure busy. */
  observe(locator: StorageLocator, layout: StoreLayout): Promise<StoreObservation>;
  /** Creates the store and the layout; a no-op when it already matches exactly. */
  materialise(locator: StorageLocator, layout: StoreLayout): Promise<void>;
  /** Adds what `target` has beyond `current` (tables, appended nullable columns, indexes) atomically. */
  evolve(locator: StorageLocator, current: StoreLayout, target: StoreLayout): Promise<void>;
  /** The current fence; StorageFailure('unavailable') when the store does not exist. */
  readFence(locator: StorageLocator): Promise<WriteFence>;
  /** readFence without a unit of work of its own, where that is cheaper (SQLite): only for a value a later unit checks again. */
  peekFence?(locator: StorageLocator): Promise<WriteFence>;
  close(): Promise<void>;
}

/** Raised by adapters, caught by core; never shown to clients as text. */
export class StorageFailure extends Error {
  constructor(
    readonly kind: 'busy' | 'unavailable' | 'constraint' | 'incompatible' | 'uncertain' | 'fence_closed' | 'migration_required',
    options?: { cause?: unknown },
  ) {
    super(`storage ${kind}`, options);
    this.name = 'StorageFailure';
  }
}

// ---------------------------------------------------------------------------
// Service data: records, history, the replay ledger and the write fence.

/**
 * One domain-field value. `integer` fields are bigint; `number` fields are
 * number (the artefact reader turns an integral token in a number field back
 * into a number); string lists are arrays of strings.
 */
export type FieldValue = null | string | bigint | number | boolean | readonly string[];
/** Domain fields only (never server-managed ones). */
export type FieldSet = Readonly<Record<string, FieldValue>>;

export interface StoredRecord {
  readonly id: string;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
  readonly createdVia: string;
  readonly recordVersion: bigint;
  /** Every domain field of the entity, null when absent. */
  readonly fields: FieldSet;
}

export type RecordFilter =
  | { readonly kind: 'equals'; readonly field: string; readonly value: string | bigint | number | boolean }
  | { readonly kind: 'member'; readonly field: string; readonly value: string };

export interface BranchScope {
  readonly branchId: string;
  readonly role: 'primary' | 'related';
}

export interface RecordQuery {
  readonly filters: readonly RecordFilter[];
  readonly branch: BranchScope | null;
  /** Keyset position: only ids greater than this. */
  readonly afterId: string | null;
  readonly limit: number;
}

export type HistoryKind = 'create' | 'update' | 'delete' | 'primary_assign' | 'primary_move' | 'primary_unassign' | 'related_assign' | 'related_unassign';

export interface HistoryEvent {
  readonly entityName: string;
  readonly recordId: string;
  readonly recordVersion: bigint;
  readonly kind: HistoryKind;
  readonly before: FieldSet | null;
  readonly after: FieldSet | null;
  readonly occurredAt: Micros;
}

export interface StoredHistoryEvent extends HistoryEvent {
  readonly sequence: bigint;
}

export interface HistoryRows {
  readonly events: StoredHistoryEvent[];
  /** Reading stopped for the text budget, with at least one more event left unread. */
  readonly cut: boolean;
}

export interface ReplayRow {
  readonly idempotencyKey: string;
  readonly kind: string;
  readonly fingerprint: string;
  readonly result: JsonValue;
  readonly completedAt: Micros;
}

export type BranchRole = 'primary' | 'related';
export type BranchStatus = 'active' | 'archived' | 'superseded';

export interface StoredBranch {
  readonly id: string;
  readonly slug: string;
  readonly title: string;
  readonly intent: string;
  readonly branchType: string | null;
  readonly parentId: string | null;
  readonly status: BranchStatus;
  readonly retrievalSummary: string | null;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
  readonly branchRevision: bigint;
}

export interface BranchQuery {
  readonly status: BranchStatus | null;
  readonly branchType: string | null;
  /** Direct children of this branch only; null = every branch. */
  readonly parentId: string | null;
  /** Keyset position: only ids greater than this. */
  readonly afterId: string | null;
  readonly limit: number;
}

export interface BranchCard {
  readonly branch: StoredBranch;
  readonly primaryCount: bigint;
  readonly relatedCount: bigint;
}

export interface FacetCount {
  readonly value: string | bigint | number | boolean;
  readonly count: bigint;
}

export interface RecordScan {
  /** Only records with any membership (primary or related) in this branch; null = all records. */
  readonly memberOf: string | null;
  /** Keyset position: only ids greater than this. */
  readonly afterId: string | null;
  readonly limit: number;
  /**
   * Only records meeting at least one of these (a superset of what the
   * caller is looking for, which it still checks on each record); absent,
   * every record. Lets a scan that finds few candidates skip the rest inside
   * the store instead of decoding them. `limit` counts the records kept.
   */
  readonly anyOf?: readonly ScanCondition[];
  /** Only ids up to this one (inclusive); absent, no upper bound. */
  readonly throughId?: string;
}

/** A condition a scanned record may meet (RecordScan.anyOf); fields are declared columns of the entity. */
export type ScanCondition =
  /** updated_at at or before this instant. */
  | { readonly kind: 'updated_at_most'; readonly micros: Micros }
  | { readonly kind: 'no_primary' }
  | { readonly kind: 'not_null'; readonly field: string }
  /** A text column equal to the value. */
  | { readonly kind: 'text_equals'; readonly field: string; readonly value: string }
  /** A numeric column at or below the value. */
  | { readonly kind: 'at_most'; readonly field: string; readonly value: number }
  /** A text column of more than this many characters. */
  | { readonly kind: 'longer_than'; readonly field: string; readonly characters: number }
  /** Every field null or, by its type, blank: a text of only U+0020 spaces, an empty list. */
  | { readonly kind: 'all_blank'; readonly fields: readonly { readonly name: string; readonly type: ColumnType }[] };

export interface DuplicateValue {
  readonly id: string;
  /** Records in scope holding the same value (at least 2). */
  readonly count: bigint;
}

export interface ScannedRecord extends StoredRecord {
  readonly hasPrimary: boolean;
}

export interface ServiceDataReader {
  getRecord(entity: EntityLayout, id: string): Promise<StoredRecord | undefined>;
  queryRecords(entity: EntityLayout, query: RecordQuery): Promise<StoredRecord[]>;
  /**
   * Events in sequence order, at most `limit`. With `textBudget`, reading may
   * stop early (`cut`) once the events read hold more than that many
   * characters of stored snapshot text (never before two events): the caller
   * cuts its page to that budget anyway.
   */
  history(entityName: string, recordId: string | null, afterSequence: bigint | null, limit: number, textBudget?: number): Promise<HistoryRows>;
  /** Whether two records of the entity share non-null values in all `columns` (all principals). */
  hasDuplicates(entityName: string, columns: readonly string[]): Promise<boolean>;

  // Branches and memberships (contract §7).
  getBranch(id: string): Promise<StoredBranch | undefined>;
  /** Whether `ancestor` is `start` or one of its ancestors by parent links (one query, whatever the depth). */
  branchReachesByParents(start: string, ancestor: string): Promise<boolean>;
  findBranchBySlug(slug: string): Promise<StoredBranch | undefined>;
  /** Ordered by id ascending; filters are exact and ANDed. */
  listBranches(query: BranchQuery): Promise<StoredBranch[]>;
  /** The record's role in the branch, if it is a member. */
  getMembership(entityName: string, recordId: string, branchId: string): Promise<BranchRole | undefined>;
  /** The id of the record's primary branch, if it has one. */
  getPrimaryBranch(entityName: string, recordId: string): Promise<string | undefined>;

  // Discovery (contract §8.2) and maintenance (§8.3) reads.
  countRecords(entity: EntityLayout): Promise<bigint>;
  /** Records of the entity that hold no primary membership. */
  countWithoutPrimary(entity: EntityLayout): Promise<bigint>;
  /**
   * Non-null observed values of one field with their record counts (or, for
   * `list_members`, the members of a string_list with their counts), ordered
   * by count descending then value ascending (strings by code point, numbers
   * numerically, false before true), at most `limit`.
   */
  facetValues(entity: EntityLayout, field: string, shape: 'scalar' | 'list_members', limit: number): Promise<FacetCount[]>;
  /** At most `limit` branches ordered by updated_at descending then id ascending, with membership counts. */
  branchCards(limit: number): Promise<BranchCard[]>;
  /** A keyset batch of records in id order, each with whether it has a primary branch. */
  scanRecords(entity: EntityLayout, scan: RecordScan): Promise<ScannedRecord[]>;
  /** The id `count` records past `afterId` in id order (null: from the start; with memberOf, among that branch's members), or null when fewer remain. */
  idAfter(entity: EntityLayout, afterId: string | null, count: number, memberOf?: string | null): Promise<string | null>;
  /**
   * The first `limit` records of the entity (in the scan's branch scope, if
   * any) in id order whose present value in `field` (not null; a string not
   * empty or only U+0020 spaces) another record in scope shares, each with
   * the number of records in scope holding that value. One pass over the
   * scope, however many records it holds.
   */
  duplicateValues(entity: EntityLayout, field: string, memberOf: string | null, limit: number): Promise<DuplicateValue[]>;
}

export interface ServiceDataWriter extends ServiceDataReader {
  /**
   * False when suspend/archive closed the store's write fence, or, given the
   * generation a mutation was admitted at, when any transition has moved it
   * since (a suspend and a resume in between leave it open again).
   */
  fenceIsOpen(generation?: bigint): Promise<boolean>;
  getReplay(idempotencyKey: string): Promise<ReplayRow | undefined>;
  putReplay(row: ReplayRow): Promise<void>;
  recordExists(entityName: string, id: string): Promise<boolean>;
  /**
   * Whether any other record of `sources` references the target through the
   * given columns; a record that references only itself does not count, as a
   * foreign key does not stop deleting such a row.
   */
  isReferenced(target: { readonly entity: string; readonly id: string }, sources: readonly { readonly entity: string; readonly column: string }[]): Promise<boolean>;
  insertRecord(entity: EntityLayout, record: StoredRecord): Promise<void>;
  updateRecord(entity: EntityLayout, record: StoredRecord): Promise<void>;
  deleteRecord(entity: EntityLayout, id: string): Promise<void>;
  appendHistory(event: HistoryEvent): Promise<void>;
  insertBranch(branch: StoredBranch): Promise<void>;
  /** Replaces every mutable column of the branch with the given id. */
  updateBranch(branch: StoredBranch): Promise<void>;
  /** Makes the record a member of the branch with `role` (replacing any membership it had there). */
  putMembership(entityName: string, recordId: string, branchId: string, role: BranchRole, assignedAt: Micros): Promise<void>;
  removeMembership(entityName: string, recordId: string, branchId: string): Promise<void>;
}

export interface ServiceDataPort {
  read<T>(locator: StorageLocator, principalId: string, work: (tx: ServiceDataReader) => Promise<T>): Promise<T>;
  write<T>(locator: StorageLocator, principalId: string, work: (tx: ServiceDataWriter) => Promise<T>): Promise<T>;
}

// ---------------------------------------------------------------------------
// Operator administration (operations spec §1.8-1.9, §4.3, §5.9-5.10). These
// extend the ports above, so an adapter that does not offer them yet still
// serves MCP; the `aipcs` admin commands need an OperatorStoragePorts.

/** Fingerprint of a claim that purge stripped: no request can ever match it. */
export const TOMBSTONED_FINGERPRINT = 'tombstoned';

export type MigrationStatus = 'uninitialised' | 'outdated' | 'ready' | 'incompatible' | 'dirty' | 'unavailable';

/** What inspection found for a registry or a service store (never a migration). */
export interface MigrationState {
  readonly status: MigrationStatus;
  /** null when unavailable. */
  readonly appliedRevision: bigint | null;
  readonly targetRevision: bigint | null;
  /** Why the state is `unavailable`. */
  readonly reason: 'busy' | 'unavailable' | null;
  /** What made it unavailable, for the operator's log only (never output). */
  readonly failure?: StorageFailure;
}

export type IdentityState = 'import_prepared' | 'tombstoned';

/** A service id that is not (or no longer) a live service: reserved by an import, or purged. */
export interface IdentityRow {
  readonly serviceId: string;
  readonly principalId: string;
  readonly state: IdentityState;
  /** The domain an import reserves; null once tombstoned. */
  readonly domainName: string | null;
  readonly idempotencyKey: string;
  readonly lifecycleAt: Micros;
}

export interface ReceiptRow {
  readonly receiptId: string;
  readonly principalId: string;
  readonly idempotencyKey: string;
  readonly serviceId: string;
  readonly kind: 'export' | 'import';
  readonly bundleRootSha256: string;
  readonly exportFormatVersion: number;
  readonly backend: BackendName;
  readonly serviceRevision: bigint;
  readonly operationalStatus: OperationalStatus;
  readonly verification: 'verified' | 'unverified';
  readonly createdAt: Micros;
}

export interface OperatorRegistryReader extends RegistryReader {
  /** The reservation or tombstone of a service id, whichever principal holds it. */
  getIdentity(serviceId: string): Promise<IdentityRow | undefined>;
  /** Whether any principal has a live service with this id. */
  serviceIdInUse(serviceId: string): Promise<boolean>;
  getReceipt(receiptId: string): Promise<ReceiptRow | undefined>;
}

export interface OperatorRegistryWriter extends RegistryWriter, OperatorRegistryReader {
  /** Inserts or replaces the identity row of `row.serviceId`. */
  putIdentity(row: IdentityRow): Promise<void>;
  deleteIdentity(serviceId: string): Promise<void>;
  insertReceipt(row: ReceiptRow): Promise<void>;
  /** Deletes every receipt of the service. */
  deleteReceipts(principalId: string, serviceId: string): Promise<void>;
  /** Deletes the service row; false when it was not there. */
  deleteService(principalId: string, serviceId: string): Promise<boolean>;
  /**
   * Strips every claim of the service except `keepKey`: intent and result are
   * dropped, the phase becomes completed and the fingerprint TOMBSTONED_FINGERPRINT,
   * so the keys stay bound and never replay.
   */
  tombstoneClaims(principalId: string, serviceId: string, keepKey: string, now: Micros): Promise<void>;
}

export interface OperatorRegistryPort extends RegistryPort {
  read<T>(work: (tx: OperatorRegistryReader) => Promise<T>): Promise<T>;
  write<T>(work: (tx: OperatorRegistryWriter) => Promise<T>): Promise<T>;
}

export type FenceState = 'open' | 'closed';

/** The write-admission fence of a service store; generations only increase. */
export interface WriteFence {
  readonly generation: bigint;
  readonly state: FenceState;
}

export interface OperatorStorePort extends ServiceStorePort {
  /** The store's foundation (bookkeeping and migration state); status `uninitialised` with revision 0 when it does not exist. */
  inspect(locator: StorageLocator): Promise<MigrationState>;
  /** Whether nothing of the store exists any more (purge's independent observation). */
  isAbsent(locator: StorageLocator): Promise<boolean>;
  /**
   * Compare-and-change in one write unit that excludes every data mutation:
   * when the fence equals `expected` it becomes `{generation + 1, target}`
   * and the new fence is returned; otherwise null and nothing changes.
   */
  changeFence(locator: StorageLocator, expected: WriteFence, target: FenceState): Promise<WriteFence | null>;
  /**
   * Removes the store of `layout` after verifying that it is this locator's
   * store and its fence is closed (StorageFailure('incompatible') otherwise).
   * Only what the store is known to hold is removed: anything else in it or
   * built on it makes the removal fail. A store that is already absent is
   * not an error.
   */
  remove(locator: StorageLocator, layout: StoreLayout): Promise<void>;
}

export interface HistoryPosition {
  readonly entityName: string;
  readonly recordId: string;
  readonly recordVersion: bigint;
}

export interface MembershipRow {
  readonly branchId: string;
  readonly entityName: string;
  readonly recordId: string;
  readonly role: BranchRole;
}

export interface OperatorDataReader extends ServiceDataReader {
  writeFence(): Promise<WriteFence>;
  /** History of every record, ordered by entity name, record id, record version (byte order), after `after`. */
  historyPage(after: HistoryPosition | null, limit: number): Promise<HistoryEvent[]>;
  /** Memberships ordered by branch id, entity name, record id, role (byte order), after `after`. */
  membershipPage(after: MembershipRow | null, limit: number): Promise<MembershipRow[]>;
}

export interface OperatorDataWriter extends ServiceDataWriter, OperatorDataReader {
  /** Sets the fence row (import staging writes the bundle's generation, closed). */
  setFence(fence: WriteFence): Promise<void>;
}

/**
 * The writes of import staging, in bounded batches, inside the one unit that
 * creates the store. History is held aside as it arrives and appended, in
 * time order (never a record's event before an earlier version of it), once
 * every event is in: the store sorts it, not the caller.
 */
export interface StagingWriter {
  /** Sets the fence row (the bundle's generation, closed). */
  setFence(fence: WriteFence): Promise<void>;
  insertRecords(entity: EntityLayout, records: readonly StoredRecord[]): Promise<void>;
  insertBranches(branches: readonly StoredBranch[]): Promise<void>;
  /** Makes each record a member of its branch with its role. */
  putMemberships(rows: readonly MembershipRow[], assignedAt: Micros): Promise<void>;
  /** Keeps events aside in the unit, in arrival order (the artefact's: each record's chain together, versions ascending); nothing is in the history yet. */
  holdHistory(events: readonly HistoryEvent[]): Promise<void>;
  /**
   * Appends every held event to the history ordered by the latest `occurredAt`
   * of its record's chain so far (its own time when clocks agreed), ties in
   * arrival order, and drops the held copy.
   */
  appendHeldHistory(): Promise<void>;
}

/** How many members a whole-store read asks for per page, and a staging unit writes per batch. */
export interface TransferBatching {
  readonly readPage: number;
  readonly stageBatch: number;
}

export interface OperatorDataPort extends ServiceDataPort {
  /**
   * The backend's batch sizes for export and import: large where each call
   * is a round trip, small in process, where short-lived batches keep the
   * heap from growing with the service.
   */
  readonly transferBatching: TransferBatching;
  /** One read unit over a consistent snapshot of the whole store. */
  read<T>(locator: StorageLocator, principalId: string, work: (tx: OperatorDataReader) => Promise<T>): Promise<T>;
  /**
   * A read unit for walking the whole store in canonical order (export,
   * re-observation): like `read`, and the adapter makes keyset pages follow
   * their indexes whatever the planner's statistics say.
   */
  scan<T>(locator: StorageLocator, principalId: string, work: (tx: OperatorDataReader) => Promise<T>): Promise<T>;
  /**
   * Import staging: creates the store with `layout` and runs `work` in the
   * same write unit, so the store appears complete or not at all. References
   * between rows are checked when the unit commits, so rows may come in any
   * order. StorageFailure('incompatible') when the store already has content.
   */
  stage<T>(locator: StorageLocator, principalId: string, layout: StoreLayout, work: (tx: StagingWriter) => Promise<T>): Promise<T>;
}
