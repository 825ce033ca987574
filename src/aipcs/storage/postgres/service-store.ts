// PostgreSQL service stores: one private schema "svc_<32hex>" per
// materialised service, holding the domain tables a StoreLayout asks for and
// the store's bookkeeping tables (prefix __aipcs_). Creation and evolution are
// single transactions under the store's advisory lock; observation compares
// the catalog with what our own DDL builds, never trusting a look-alike.
// Operators also inspect the foundation, move the write fence with
// compare-and-change, and remove a purged store. Knows nothing of records
// beyond their table shape (see service-data.ts).

import { createHash } from 'node:crypto';
import {
  StorageFailure,
  type ColumnLayout,
  type ColumnType,
  type EntityLayout,
  type FenceState,
  type MigrationState,
  type OperatorStorePort,
  type StorageLocator,
  type StoreLayout,
  type StoreObservation,
  type WriteFence,
} from '../../core/ports.js';
import { canAdvance } from '../../core/counters.js';
import { WeighedCache } from '../../../common/weighed-cache.js';
import {
  metaRevisionOf,
  quotedIdentifiers,
  schemaIsEmpty,
  schemaPresence,
  schemaPrivateSubquery,
  schemaSignature,
  shapeSignature,
  type CatalogShape,
  type ColumnShape,
  type TableShape,
} from './catalog.js';
import { FOUNDATION_SHAPE } from './catalog-shapes.js';
import { type PgSession, type PostgresConnection } from './connection.js';
import { numberedPlaceholders, quoteIdentifier, toWriteFence, upsertWriteFence, writeFenceRow, type TableName } from '../shared/statements.js';
import type { Row } from '../shared/record-codec.js';
import { unavailableState } from '../shared/migration-state.js';

export const SERVICE_STORE_ADAPTER_ID = 'aipcs.postgresql.service_store';
export const SERVICE_STORE_REVISION = 1n;

const NAMESPACE = /^svc_[0-9a-f]{32}$/;

/** The schema of a locator this adapter may use, or unavailable. */
export function schemaOf(locator: StorageLocator): string {
  if (locator.backend !== 'postgresql' || !NAMESPACE.test(locator.namespace)) throw new StorageFailure('unavailable');
  return locator.namespace;
}

/**
 * The one advisory lock of a store: data writes, write-fence changes and
 * DDL all take it, so a mutation never interleaves with a fence transition
 * or a layout change, and history sequence numbers follow commit order.
 */
export async function lockStore(session: PgSession, schema: string): Promise<void> {
  await session.run(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`aipcs:service_store:${schema}`]);
}

const SQL_TYPES: Record<ColumnLayout['type'], string> = {
  // Collation "C": equality, uniqueness, ordering and cursors are bytewise
  // whatever the database's locale.
  text: 'text COLLATE "C"',
  integer: 'bigint',
  real: 'double precision',
  boolean: 'boolean',
  // The contract returns the original datetime string verbatim, and filters by
  // exact string equality, so it is kept as text rather than timestamptz.
  datetime: 'text COLLATE "C"',
  // Text keeps the canonical string exactly and never fails a cast on input.
  uuid: 'text COLLATE "C"',
  // A JSON array of strings; its members are also kept, one row each, in
  // "__aipcs_list_member" for membership search in id order.
  string_list: 'jsonb',
};

/** Each column type as format_type renders it, and whether its column has collation "C" (see SQL_TYPES). */
const CATALOG_TYPES: Record<ColumnLayout['type'], readonly [type: string, collation: 'C' | null]> = {
  text: ['text', 'C'],
  integer: ['bigint', null],
  real: ['double precision', null],
  boolean: ['boolean', null],
  datetime: ['text', 'C'],
  uuid: ['text', 'C'],
  string_list: ['jsonb', null],
};

/** Names the adapter derives must fit PostgreSQL's 63-byte identifiers and never meet a manifest name (which cannot start with "_"). */
function derivedName(prefix: string, ...parts: string[]): string {
  return `${prefix}${createHash('sha256').update(parts.join('\u001f'), 'utf8').digest('hex').slice(0, 16)}`;
}

/**
 * PostgreSQL refuses these as column names even when quoted (they name every
 * table's system columns), though a manifest may declare fields so named. Such
 * a field lives in a column with a leading "_", which no manifest name has.
 */
const SYSTEM_COLUMN_NAMES: ReadonlySet<string> = new Set(['tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid']);

/** The column that holds a field (or a server-managed column) of a domain table. */
const columnName = (field: string): string => (SYSTEM_COLUMN_NAMES.has(field) ? `_${field}` : field);

/** The quoted column that holds a field (or a server-managed column) of a domain table. */
export function quoteColumn(field: string): string {
  return quoteIdentifier(columnName(field));
}

/** A select-list item reading a field's column of the table aliased `r` under the field's own name. */
export function selectColumn(field: string): string {
  const column = quoteColumn(field);
  const name = quoteIdentifier(field);
  return column === name ? `r.${column}` : `r.${column} AS ${name}`;
}

export const primaryKeyName = (entity: string) => derivedName('__aipcs_pk_', entity);
export const equalityIndexName = (entity: string, field: string) => derivedName('__aipcs_eq_', entity, field);

/**
 * A btree entry must fit in a third of a page (2704 bytes), and a string or
 * datetime field may hold 16 KiB of text that does not compress: indexed as
 * is, such a value would fail the write that SQLite accepts. Those columns are
 * therefore indexed through a hash of their text. An equality index keys on
 * hashtextextended (a search compares the hash, then the value itself); a
 * declared index keys on md5, so that a unique one still refuses exactly the
 * equal values.
 */
const HASHED_TYPES: ReadonlySet<ColumnType> = new Set<ColumnType>(['text', 'datetime']);
const columnType = (entity: EntityLayout, field: string): ColumnType | undefined => entity.columns.find((column) => column.name === field)?.type;

/** The key of a column in its equality index, for `column` (a quoted, possibly qualified name) of that type. */
export function equalityKey(column: string, type: ColumnType | undefined): string {
  return type !== undefined && HASHED_TYPES.has(type) ? `hashtextextended(${column}, 0)` : column;
}

function declaredIndexKey(entity: EntityLayout, field: string): string {
  const type = columnType(entity, field);
  return type !== undefined && HASHED_TYPES.has(type) ? `(md5(${quoteColumn(field)}))` : quoteColumn(field);
}
export const ownerIndexName = (entity: string) => derivedName('__aipcs_ow_', entity);
export const foreignKeyIndexName = (entity: string, field: string) => derivedName('__aipcs_fk_', entity, field);
export const notNullName = (entity: string, field: string) => derivedName('__aipcs_nn_', entity, field);

/**
 * Foreign keys among the bookkeeping tables, added after the tables (like
 * the domain ones) so that a store can be filled in any row order first.
 */
export function bookkeepingKeysDdl(schema: string): string[] {
  const s = quoteIdentifier(schema);
  return [
    `ALTER TABLE ${s}."__aipcs_memory_branch" ADD CONSTRAINT "__aipcs_memory_branch_parent_fk" FOREIGN KEY ("parent_branch_id")
  REFERENCES ${s}."__aipcs_memory_branch" ("id") ON DELETE RESTRICT ON UPDATE RESTRICT NOT DEFERRABLE`,
    `ALTER TABLE ${s}."__aipcs_record_branch" ADD CONSTRAINT "__aipcs_record_branch_branch_fk" FOREIGN KEY ("branch_id")
  REFERENCES ${s}."__aipcs_memory_branch" ("id") ON DELETE RESTRICT ON UPDATE RESTRICT NOT DEFERRABLE`,
  ];
}

/** The tables bookkeepingDdl creates: with the entity tables, everything a store holds (purge drops exactly these). */
const BOOKKEEPING_TABLES = [
  '__aipcs_service_store_meta',
  '__aipcs_record_mutation',
  '__aipcs_write_fence',
  '__aipcs_record_history',
  '__aipcs_memory_branch',
  '__aipcs_record_branch',
  '__aipcs_list_member',
];

/** Bookkeeping tables every store has, whatever its manifest (their keys: bookkeepingKeysDdl). */
export function bookkeepingDdl(schema: string): string[] {
  const s = quoteIdentifier(schema);
  return [
    `CREATE TABLE ${s}."__aipcs_service_store_meta" (
  "singleton" smallint NOT NULL PRIMARY KEY CHECK ("singleton" = 1),
  "adapter_id" text COLLATE "C" NOT NULL,
  "namespace" text COLLATE "C" NOT NULL,
  "applied_revision" bigint NOT NULL
)`,
    `CREATE TABLE ${s}."__aipcs_record_mutation" (
  "principal_id" text COLLATE "C" NOT NULL,
  "idempotency_key" text COLLATE "C" NOT NULL,
  "operation_kind" text COLLATE "C" NOT NULL,
  "fingerprint" text COLLATE "C" NOT NULL,
  "result_json" text COLLATE "C" NOT NULL,
  "completed_at" bigint NOT NULL,
  PRIMARY KEY ("principal_id", "idempotency_key")
)`,
    `CREATE TABLE ${s}."__aipcs_write_fence" (
  "singleton" smallint NOT NULL PRIMARY KEY CHECK ("singleton" = 1),
  "generation" bigint NOT NULL CHECK ("generation" >= 1),
  "state" text COLLATE "C" NOT NULL CHECK ("state" IN ('open', 'closed'))
)`,
    `CREATE TABLE ${s}."__aipcs_record_history" (
  "event_sequence" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  "principal_id" text COLLATE "C" NOT NULL,
  "entity_name" text COLLATE "C" NOT NULL,
  "record_id" text COLLATE "C" NOT NULL,
  "record_version" bigint NOT NULL,
  "event_kind" text COLLATE "C" NOT NULL,
  "before_json" text COLLATE "C",
  "after_json" text COLLATE "C",
  "occurred_at" bigint NOT NULL
)`,
    `CREATE INDEX "__aipcs_record_history_entity" ON ${s}."__aipcs_record_history" ("principal_id", "entity_name", "event_sequence")`,
    // Export walks history in (entity, record, version) order, and one record's
    // history pages in version order: keyset pages follow this index.
    `CREATE INDEX "__aipcs_record_history_version" ON ${s}."__aipcs_record_history" ("principal_id", "entity_name", "record_id", "record_version")`,
    `CREATE TABLE ${s}."__aipcs_memory_branch" (
  "id" text COLLATE "C" NOT NULL PRIMARY KEY,
  "principal_id" text COLLATE "C" NOT NULL,
  "slug" text COLLATE "C" NOT NULL,
  "title" text COLLATE "C" NOT NULL,
  "intent" text COLLATE "C" NOT NULL,
  "branch_type" text COLLATE "C",
  "parent_branch_id" text COLLATE "C",
  "status" text COLLATE "C" NOT NULL CHECK ("status" IN ('active', 'archived', 'superseded')),
  "retrieval_summary" text COLLATE "C",
  "branch_revision" bigint NOT NULL,
  "created_at" bigint NOT NULL,
  "updated_at" bigint NOT NULL,
  UNIQUE ("principal_id", "slug")
)`,
    // Led by the referencing column, as on SQLite (whose import stages with deferred keys and looks a parent's children up by it).
    `CREATE INDEX "__aipcs_memory_branch_parent" ON ${s}."__aipcs_memory_branch" ("parent_branch_id", "principal_id", "id")`,
    // Branch list pages walk ids in order and stop at the limit.
    `CREATE INDEX "__aipcs_memory_branch_list" ON ${s}."__aipcs_memory_branch" ("principal_id", "id")`,
    // Summary branch cards: most recently updated first, ties by id.
    `CREATE INDEX "__aipcs_memory_branch_recent" ON ${s}."__aipcs_memory_branch" ("principal_id", "updated_at" DESC, "id")`,
    // Branch list pages filtered by status or type: without them a rare value
    // walked every branch of the principal to fill one page.
    `CREATE INDEX "__aipcs_memory_branch_status" ON ${s}."__aipcs_memory_branch" ("principal_id", "status", "id")`,
    `CREATE INDEX "__aipcs_memory_branch_type" ON ${s}."__aipcs_memory_branch" ("principal_id", "branch_type", "id")`,
    `CREATE TABLE ${s}."__aipcs_record_branch" (
  "principal_id" text COLLATE "C" NOT NULL,
  "entity_name" text COLLATE "C" NOT NULL,
  "record_id" text COLLATE "C" NOT NULL,
  "branch_id" text COLLATE "C" NOT NULL,
  "role" text COLLATE "C" NOT NULL CHECK ("role" IN ('primary', 'related')),
  "assigned_at" bigint NOT NULL,
  PRIMARY KEY ("principal_id", "entity_name", "record_id", "branch_id")
)`,
    `CREATE UNIQUE INDEX "__aipcs_record_branch_one_primary" ON ${s}."__aipcs_record_branch" ("principal_id", "entity_name", "record_id") WHERE "role" = 'primary'`,
    `CREATE INDEX "__aipcs_record_branch_scope" ON ${s}."__aipcs_record_branch" ("principal_id", "branch_id", "role", "entity_name", "record_id")`,
    // Export pages memberships in (branch, entity, record, role) order: the
    // scope index has role second and would sort a whole branch for each page.
    `CREATE INDEX "__aipcs_record_branch_export" ON ${s}."__aipcs_record_branch" ("principal_id", "branch_id", "entity_name", "record_id", "role")`,
    // One row per member of every string_list value, keyed so that a
    // membership search walks the matching record ids in order and stops at
    // the page limit (a GIN index on the jsonb column cannot deliver id order).
    `CREATE TABLE ${s}."__aipcs_list_member" (
  "principal_id" text COLLATE "C" NOT NULL,
  "entity_name" text COLLATE "C" NOT NULL,
  "field_name" text COLLATE "C" NOT NULL,
  "member" text COLLATE "C" NOT NULL,
  "record_id" text COLLATE "C" NOT NULL,
  PRIMARY KEY ("principal_id", "entity_name", "field_name", "member", "record_id")
)`,
    // Finds a record's members to replace or delete them. A hash index, so
    // that it never offers the planner a record-id order to walk instead of
    // the primary key's (member, record_id) range.
    `CREATE INDEX "__aipcs_list_member_record" ON ${s}."__aipcs_list_member" USING hash ("record_id")`,
  ];
}

/**
 * A column of an entity table. PostgreSQL 18 records NOT NULL as a constraint
 * and, left unnamed, calls it <table>_<column>_not_null, in the table's
 * constraint namespace that the foreign keys share: a relationship so named
 * then failed to materialise. Our name cannot meet a manifest name.
 */
function columnDdl(entity: string, column: ColumnLayout): string {
  const notNull = column.notNull || column.name === 'id' ? ` CONSTRAINT ${quoteIdentifier(notNullName(entity, column.name))} NOT NULL` : '';
  return `${quoteColumn(column.name)} ${SQL_TYPES[column.type]}${notNull}`;
}

/** CREATE TABLE for an entity, without its foreign keys (added once every table exists, since references may form cycles). */
function tableDdl(schema: string, entity: EntityLayout): string {
  const parts = [...entity.columns.map((column) => columnDdl(entity.name, column)), `CONSTRAINT ${quoteIdentifier(primaryKeyName(entity.name))} PRIMARY KEY ("id")`];
  return `CREATE TABLE ${quoteIdentifier(schema)}.${quoteIdentifier(entity.name)} (\n  ${parts.join(',\n  ')}\n)`;
}

function foreignKeyDdl(schema: string, entity: EntityLayout, skip: ReadonlySet<string>): string[] {
  const s = quoteIdentifier(schema);
  return entity.foreignKeys
    .filter((fk) => !skip.has(fk.name))
    .map(
      (fk) =>
        `ALTER TABLE ${s}.${quoteIdentifier(entity.name)} ADD CONSTRAINT ${quoteIdentifier(fk.name)} FOREIGN KEY (${quoteColumn(fk.column)}) ` +
        `REFERENCES ${s}.${quoteIdentifier(fk.targetEntity)} ("id") ON DELETE RESTRICT ON UPDATE RESTRICT NOT DEFERRABLE`,
    );
}

/**
 * Index DDL for an entity, skipping what an existing entity already has.
 * Every record query is scoped to its owner and ordered by id, so the
 * adapter's own indexes lead with "owner_id" and end with "id": a page walks
 * one index range in id order and stops at its limit, whatever the planner's
 * statistics say. String lists need no index here (see "__aipcs_list_member").
 */
function indexDdl(schema: string, entity: EntityLayout, existing?: EntityLayout): string[] {
  const table = `${quoteIdentifier(schema)}.${quoteIdentifier(entity.name)}`;
  const indexes = new Set(existing?.indexes.map((index) => index.name));
  const equality = new Set(existing?.equalityFields);
  const ddl: string[] = [];
  if (!existing) ddl.push(`CREATE INDEX ${quoteIdentifier(ownerIndexName(entity.name))} ON ${table} ("owner_id", "id")`);
  for (const index of entity.indexes) {
    if (indexes.has(index.name)) continue;
    ddl.push(`CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX ${quoteIdentifier(index.name)} ON ${table} (${index.columns.map((field) => declaredIndexKey(entity, field)).join(', ')})`);
  }
  // Deleting a referenced record looks for rows that still point at it, both
  // our own check and PostgreSQL's restrict trigger, by the column alone: the
  // equality index leads with "owner_id" and cannot serve that lookup, which
  // then scanned the whole referencing table on every delete.
  const keyed = new Set(existing?.foreignKeys.map((fk) => fk.name));
  for (const fk of entity.foreignKeys) {
    if (!keyed.has(fk.name)) ddl.push(`CREATE INDEX ${quoteIdentifier(foreignKeyIndexName(entity.name, fk.column))} ON ${table} (${quoteColumn(fk.column)})`);
  }
  for (const field of entity.equalityFields) {
    if (equality.has(field)) continue;
    const column = quoteColumn(field);
    const key = equalityKey(column, columnType(entity, field));
    ddl.push(`CREATE INDEX IF NOT EXISTS ${quoteIdentifier(equalityIndexName(entity.name, field))} ON ${table} ("owner_id", ${key === column ? key : `(${key})`}, "id")`);
  }
  return ddl;
}

/**
 * The equality indexes of fields a layout's successor makes filterable
 * without any change of structure (a metadata-only evolve: a field's
 * retrieval_mode from annotation to exact). Equality indexes are outside the
 * layout signature, so such a successor matches the store at once and
 * evolutionDdl never runs for it. IF NOT EXISTS: a resumed evolve runs it again.
 */
function addedEqualityIndexDdl(schema: string, current: StoreLayout, target: StoreLayout): string[] {
  const before = new Map(current.entities.map((entity) => [entity.name, entity]));
  return target.entities.flatMap((entity) => {
    const old = before.get(entity.name);
    // Every other index and key counted as present: only equality indexes are made.
    return old ? indexDdl(schema, entity, { ...old, indexes: entity.indexes, foreignKeys: entity.foreignKeys }) : [];
  });
}

/** A fresh store without its foreign keys: schema, bookkeeping, domain tables and indexes. */
export function storeTablesDdl(schema: string, layout: StoreLayout): string[] {
  const s = quoteIdentifier(schema);
  return [
    `CREATE SCHEMA ${s} AUTHORIZATION CURRENT_USER`,
    `REVOKE ALL ON SCHEMA ${s} FROM PUBLIC`,
    ...bookkeepingDdl(schema),
    ...layout.entities.map((entity) => tableDdl(schema, entity)),
    ...layout.entities.flatMap((entity) => indexDdl(schema, entity)),
  ];
}

/** The foreign keys of a fresh store (checked against the rows already there when added), then the revokes. */
export function storeKeysDdl(schema: string, layout: StoreLayout): string[] {
  return [...bookkeepingKeysDdl(schema), ...layout.entities.flatMap((entity) => foreignKeyDdl(schema, entity, new Set())), ...revokeDdl(schema)];
}

/** Everything a fresh store needs. */
export function storeDdl(schema: string, layout: StoreLayout): string[] {
  return [...storeTablesDdl(schema, layout), ...storeKeysDdl(schema, layout)];
}

/** The columns whose names a layout's index keys render (see entityShape). */
function indexedColumns(layout: StoreLayout): string[] {
  return layout.entities.flatMap((entity) => [...entity.indexes.flatMap((index) => index.columns), ...entity.foreignKeys.map((fk) => fk.column)].map(columnName));
}

/**
 * An entity table as the catalog describes what tableDdl, indexDdl and
 * foreignKeyDdl build (equality indexes are left out of signatures);
 * `quoted` renders a column name as the server's quote_ident does.
 */
function entityShape(entity: EntityLayout, quoted: (column: string) => string): TableShape {
  const primaryKey = primaryKeyName(entity.name);
  const hashed = (field: string): boolean => {
    const type = columnType(entity, field);
    return type !== undefined && HASHED_TYPES.has(type);
  };
  const key = (field: string): string => (hashed(field) ? `md5(${quoted(columnName(field))})` : quoted(columnName(field)));
  return {
    name: entity.name,
    columns: entity.columns.map((column): ColumnShape => {
      const [type, collation] = CATALOG_TYPES[column.type];
      return [columnName(column.name), type, column.notNull || column.name === 'id', collation];
    }),
    constraints: [
      { name: primaryKey, kind: 'p', columns: ['id'] },
      ...entity.foreignKeys.map((fk) => ({ name: fk.name, kind: 'f' as const, columns: [columnName(fk.column)], references: fk.targetEntity })),
    ],
    indexes: [
      { name: primaryKey, keys: ['id'], unique: true, primary: true },
      { name: ownerIndexName(entity.name), keys: ['owner_id', 'id'] },
      ...entity.indexes.map((index) => {
        const expressions = index.columns.filter(hashed).map(key);
        return { name: index.name, keys: index.columns.map(key), ...(index.unique ? { unique: true as const } : {}), ...(expressions.length > 0 ? { expressions: expressions.join(', ') } : {}) };
      }),
      ...entity.foreignKeys.map((fk) => ({ name: foreignKeyIndexName(entity.name, fk.column), keys: [quoted(columnName(fk.column))] })),
    ],
  };
}

/** What storeDdl(layout) builds, as the catalog describes it. */
export function storeShape(layout: StoreLayout, quoted: (column: string) => string): CatalogShape {
  return { tables: [...FOUNDATION_SHAPE.tables, ...layout.entities.map((entity) => entityShape(entity, quoted))], sequences: FOUNDATION_SHAPE.sequences };
}

/** The signature of the bookkeeping tables alone (schemaSignature with BOOKKEEPING_PREFIX). */
const FOUNDATION_SIGNATURE = shapeSignature(FOUNDATION_SHAPE);

/** Prefix of every bookkeeping table; manifest names cannot start with "_". */
const BOOKKEEPING_PREFIX = '__aipcs_';

function revokeDdl(schema: string): string[] {
  const s = quoteIdentifier(schema);
  return [`REVOKE ALL ON ALL TABLES IN SCHEMA ${s} FROM PUBLIC`, `REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${s} FROM PUBLIC`];
}

/** The additive DDL from one layout to its successor: new tables, appended columns, new keys and indexes. */
export function evolutionDdl(schema: string, current: StoreLayout, target: StoreLayout): string[] {
  const s = quoteIdentifier(schema);
  const before = new Map(current.entities.map((entity) => [entity.name, entity]));
  const tables: string[] = [];
  const keys: string[] = [];
  const indexes: string[] = [];
  for (const entity of target.entities) {
    const old = before.get(entity.name);
    if (!old) tables.push(tableDdl(schema, entity));
    else for (const column of entity.columns.slice(old.columns.length)) tables.push(`ALTER TABLE ${s}.${quoteIdentifier(entity.name)} ADD COLUMN ${columnDdl(entity.name, column)}`);
    keys.push(...foreignKeyDdl(schema, entity, new Set(old?.foreignKeys.map((fk) => fk.name))));
    indexes.push(...indexDdl(schema, entity, old));
  }
  return [...tables, ...keys, ...indexes, ...revokeDdl(schema)];
}

/** Whether the store's metadata row binds it to this adapter, revision and namespace. */
async function metaMatches(session: PgSession, schema: string): Promise<boolean> {
  // Asked first so that a schema without the table answers "no" rather than aborting the unit.
  const table = await session.first<{ present: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = '__aipcs_service_store_meta' AND c.relkind = 'r') AS present`,
    [schema],
  );
  if (table?.present !== true) return false;
  return metaBinds(await session.first<StoreMetaRow>(storeMetaSelect(schema)), schema);
}

/** The store's meta row, as storeMetaSelect reads it (and, all null, when a join found none). */
export interface StoreMetaRow {
  readonly adapter_id: string | null;
  readonly namespace: string | null;
  readonly applied_revision: bigint | null;
  /** Whether the schema is still owned by the current user with nothing granted to PUBLIC. */
  readonly private: boolean | null;
}

/** Reads the meta row (alias "m", its columns named as in StoreMetaRow), and `columns` of what `joins` adds, in one statement. */
export function storeMetaSelect(schema: string, columns = '', joins = ''): string {
  return `SELECT m."adapter_id", m."namespace", m."applied_revision", ${schemaPrivateSubquery(schema)} AS "private"${columns} FROM ${quoteIdentifier(schema)}."__aipcs_service_store_meta" AS m${joins} WHERE m."singleton" = 1`;
}

/** Whether a meta row binds the schema's tables to this adapter, revision and namespace, in a schema still ours alone. */
function metaBinds(meta: StoreMetaRow | undefined, schema: string): boolean {
  // The namespace binds the tables to their locator: a renamed copy never reads as ready.
  return (
    meta !== undefined &&
    meta.adapter_id === SERVICE_STORE_ADAPTER_ID &&
    meta.namespace === schema &&
    meta.applied_revision === SERVICE_STORE_REVISION &&
    meta.private === true
  );
}

/**
 * Refuses a store whose meta row does not bind it to `schema` at this
 * build's revision (operations spec §3.2.6, decision D42): another service's
 * schema renamed or restored under this name, or one a newer build has moved
 * on; or whose schema another role owns or PUBLIC was granted, which
 * inspection reports incompatible (§3.3.2) and which SQLite's data units
 * refuse as an unsafe store file. Data units read the row with a statement
 * they run anyway (service-data.ts), so the check costs no round trip.
 */
export function assertStoreBinding(meta: StoreMetaRow | undefined, schema: string): void {
  if (!metaBinds(meta, schema)) throw new StorageFailure('incompatible');
}

/** A table of the store in `schema`, as the shared statements name it. */
const inSchema = (schema: string): TableName => (name) => `${quoteIdentifier(schema)}.${quoteIdentifier(name)}`;

export async function readFenceRow(session: PgSession, schema: string, lock: boolean): Promise<WriteFence> {
  const { sql, params } = writeFenceRow(inSchema(schema));
  return toWriteFence(await session.first<Row>(`${sql}${lock ? ' FOR UPDATE' : ''}`, params));
}

export async function putFenceRow(session: PgSession, schema: string, fence: WriteFence): Promise<void> {
  const { sql, params } = upsertWriteFence(inSchema(schema), fence);
  await session.run(numberedPlaceholders(sql), params);
}

export async function insertStoreMeta(session: PgSession, schema: string): Promise<void> {
  await session.run(`INSERT INTO ${quoteIdentifier(schema)}."__aipcs_service_store_meta" ("singleton", "adapter_id", "namespace", "applied_revision") VALUES (1, $1, $2, $3)`, [
    SERVICE_STORE_ADAPTER_ID,
    schema,
    SERVICE_STORE_REVISION,
  ]);
}

export type LayoutState = 'missing' | 'matches' | 'differs';

/**
 * How the schema relates to the expected signature of a layout. An empty
 * schema differs, as the reference has it (a collision, never adopted): we
 * create a store's schema and tables in one unit, so an empty one was made
 * by someone else, with default privileges or ownership our checks of the
 * finished store would not all see (as for the registry, decision D31).
 */
export async function compareLayout(session: PgSession, schema: string, expected: string): Promise<LayoutState> {
  const presence = await schemaPresence(session, schema);
  if (presence === 'missing') return 'missing';
  if (presence === 'untrusted') return 'differs';
  if ((await schemaSignature(session, schema)) !== expected) return 'differs';
  return (await metaMatches(session, schema)) ? 'matches' : 'differs';
}

/** The service stores of one database; they share the storage's pool. */
export class PostgresServiceStores implements OperatorStorePort {
  /** Expected signatures by digest of the layout, for the services this process met lately (see WeighedCache). */
  private readonly signatures = new WeighedCache<string, string>(512, 8 * 1024 * 1024);

  constructor(private readonly connection: PostgresConnection) {}

  /** The signature of the store of `layout` (rendered, never built: see catalog.ts). */
  async expectedSignature(layout: StoreLayout): Promise<string> {
    const cacheKey = createHash('sha256').update(JSON.stringify(layout)).digest('base64');
    const cached = this.signatures.get(cacheKey);
    if (cached !== undefined) return cached;
    const quoted = await quotedIdentifiers(this.connection, indexedColumns(layout));
    const signature = shapeSignature(storeShape(layout, (column) => quoted.get(column) ?? quoteIdentifier(column)));
    this.signatures.set(cacheKey, signature, signature.length);
    return signature;
  }

  async observe(locator: StorageLocator, layout: StoreLayout): Promise<StoreObservation> {
    try {
      const schema = schemaOf(locator);
      const expected = await this.expectedSignature(layout);
      const state = await this.connection.transaction('read', (session) => compareLayout(session, schema, expected));
      return { state: state === 'matches' ? 'ready' : state === 'differs' ? 'incompatible' : 'uninitialised' };
    } catch (error) {
      // Contention (a table held by a lock past lock_timeout) stays busy, as a
      // SQLite store's busy timeout does: the caller reports it as retryable.
      if (error instanceof StorageFailure && error.kind === 'busy') throw error;
      return { state: 'unavailable' };
    }
  }

  async materialise(locator: StorageLocator, layout: StoreLayout): Promise<void> {
    const schema = schemaOf(locator);
    const expected = await this.expectedSignature(layout);
    await this.connection.transaction('write', async (session) => {
      await lockStore(session, schema);
      const state = await compareLayout(session, schema, expected);
      if (state === 'matches') return;
      if (state === 'differs') throw new StorageFailure('incompatible');
      for (const ddl of storeDdl(schema, layout)) await session.run(ddl);
      await insertStoreMeta(session, schema);
      await putFenceRow(session, schema, { generation: 1n, state: 'open' });
      if ((await compareLayout(session, schema, expected)) !== 'matches') throw new StorageFailure('incompatible');
    });
  }

  async evolve(locator: StorageLocator, current: StoreLayout, target: StoreLayout): Promise<void> {
    const schema = schemaOf(locator);
    const expectedCurrent = await this.expectedSignature(current);
    const expectedTarget = await this.expectedSignature(target);
    await this.connection.transaction('write', async (session) => {
      await lockStore(session, schema);
      if ((await compareLayout(session, schema, expectedTarget)) === 'matches') {
        for (const ddl of addedEqualityIndexDdl(schema, current, target)) await session.run(ddl);
        return;
      }
      if ((await compareLayout(session, schema, expectedCurrent)) !== 'matches') throw new StorageFailure('incompatible');
      for (const ddl of evolutionDdl(schema, current, target)) await session.run(ddl);
      if ((await compareLayout(session, schema, expectedTarget)) !== 'matches') throw new StorageFailure('incompatible');
      // A data write admitted under the old layout finds the generation moved and is admitted again.
      // (At 2^63-1 it cannot move; operator transitions are refused there too.)
      const fence = await readFenceRow(session, schema, true);
      if (canAdvance(fence.generation)) await putFenceRow(session, schema, { generation: fence.generation + 1n, state: fence.state });
    });
  }

  /** The pool belongs to the storage as a whole. */
  async close(): Promise<void> {}

  // -------------------------------------------------------------------------
  // Operator administration

  async inspect(locator: StorageLocator): Promise<MigrationState> {
    const target = SERVICE_STORE_REVISION;
    try {
      const schema = schemaOf(locator);
      const expected = FOUNDATION_SIGNATURE;
      return await this.connection.transaction('read', async (session): Promise<MigrationState> => {
        const presence = await schemaPresence(session, schema);
        if (presence === 'missing') return { status: 'uninitialised', appliedRevision: 0n, targetRevision: target, reason: null };
        if (presence === 'trusted' && (await schemaSignature(session, schema, BOOKKEEPING_PREFIX)) === expected && (await metaMatches(session, schema))) {
          return { status: 'ready', appliedRevision: SERVICE_STORE_REVISION, targetRevision: target, reason: null };
        }
        const appliedRevision = presence === 'trusted' ? await metaRevisionOf(session, schema, '__aipcs_service_store_meta', SERVICE_STORE_ADAPTER_ID, [SERVICE_STORE_REVISION]) : null;
        return { status: 'incompatible', appliedRevision, targetRevision: target, reason: null };
      });
    } catch (error) {
      return unavailableState(error);
    }
  }

  async isAbsent(locator: StorageLocator): Promise<boolean> {
    const schema = schemaOf(locator);
    return this.connection.transaction('read', async (session) => (await schemaPresence(session, schema)) === 'missing');
  }

  async readFence(locator: StorageLocator): Promise<WriteFence> {
    const schema = schemaOf(locator);
    // A missing schema or table fails the query: unavailable, as the port asks.
    return this.connection.transaction('read', (session) => readFenceRow(session, schema, false));
  }

  async changeFence(locator: StorageLocator, expected: WriteFence, target: FenceState): Promise<WriteFence | null> {
    const schema = schemaOf(locator);
    // The store lock excludes every data mutation (they take it first and
    // check the fence under it); FOR UPDATE also stops a peer that reads the
    // row without the lock.
    return this.connection.transaction('write', async (session) => {
      await lockStore(session, schema);
      const current = await readFenceRow(session, schema, true);
      if (current.generation !== expected.generation || current.state !== expected.state) return null;
      const next: WriteFence = { generation: current.generation + 1n, state: target };
      await putFenceRow(session, schema, next);
      return next;
    });
  }

  async remove(locator: StorageLocator, layout: StoreLayout): Promise<void> {
    const schema = schemaOf(locator);
    if (this.connection.readOnly) throw new StorageFailure('unavailable');
    await this.connection.transaction('write', async (session) => {
      await lockStore(session, schema);
      const presence = await schemaPresence(session, schema);
      if (presence === 'missing') return;
      if (presence === 'trusted' && (await schemaIsEmpty(session, schema))) {
        // Nothing but an empty schema of ours: removing it is what "absent" means.
        await session.run(`DROP SCHEMA ${quoteIdentifier(schema)}`);
        return;
      }
      // Only this locator's own store, with its fence closed, is ever removed.
      if (presence !== 'trusted' || !(await metaMatches(session, schema)) || (await readFenceRow(session, schema, true)).state !== 'closed') {
        throw new StorageFailure('incompatible');
      }
      // The known tables, then the schema, all RESTRICT (operations spec
      // §5.10): a view, foreign key or table someone built on or in the store
      // makes the removal fail, and the purge stay prepared for a retry once
      // it is gone, instead of vanishing with the store as CASCADE would do.
      const s = quoteIdentifier(schema);
      const tables = [...BOOKKEEPING_TABLES, ...layout.entities.map((entity) => entity.name)].map((name) => `${s}.${quoteIdentifier(name)}`);
      await session.run(`DROP TABLE IF EXISTS ${tables.join(', ')} RESTRICT`);
      await session.run(`DROP SCHEMA ${s} RESTRICT`);
    });
  }
}
