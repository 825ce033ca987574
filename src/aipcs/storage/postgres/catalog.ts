// Reads what a schema physically holds from pg_catalog, as one comparable
// signature, and checks who owns it and who else may use it. The expected
// signature of our own DDL is rendered here from a description of the
// catalog rows it makes (catalog-shapes.ts, and the entity tables a layout
// asks for), so comparing never builds anything: inspection runs read-only
// transactions over pg_catalog and never DDL (operations spec §3.3.3).
// A test builds our DDL on every supported major and checks that the
// server describes it exactly as these shapes do.

import { type PgSession, type PostgresConnection } from './connection.js';
import { quoteIdentifier } from '../shared/statements.js';

/**
 * Prefix of performance-only indexes that evolution may leave behind; not part
 * of a layout's identity. Only a non-unique one is ignored: a unique index
 * refuses rows whatever its name, so it is drift.
 */
export const IGNORED_INDEX_PREFIX = '__aipcs_eq_';

/**
 * The schema's structure: relations, columns, constraints, indexes and
 * anything that could act on rows. With `tablePrefix`, only the tables whose
 * names start with it (with their columns, constraints and indexes) are
 * described: a store's foundation without its manifest-dependent domain
 * tables. Every other kind of relation (a view, a sequence) and everything
 * that could act on rows (a trigger, rule or policy, row security) is read
 * from the whole schema either way, since no layout makes any: a trigger on
 * a domain table is foundation drift, as it is for a SQLite store (decision
 * D68).
 */
export async function schemaSignature(session: PgSession, schema: string, tablePrefix: string | null = null): Promise<string> {
  const params = [schema, tablePrefix ?? ''];
  // $2 = '' selects every table (starts_with(x, '') is true).
  const relations = await session.rows<{ relname: string; relkind: string; rls: boolean }>(
    `SELECT c.relname, c.relkind::text AS relkind, c.relrowsecurity AS rls
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind <> 'i' AND (c.relkind <> 'r' OR starts_with(c.relname, $2))
      ORDER BY c.relname COLLATE "C"`,
    params,
  );
  const columns = await session.rows<Record<string, unknown>>(
    `SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull, a.attidentity::text AS identity,
            a.attgenerated::text AS generated, a.atthasdef, coll.collname,
            row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) AS position
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_collation coll ON coll.oid = a.attcollation
      WHERE n.nspname = $1 AND c.relkind = 'r' AND starts_with(c.relname, $2) AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname COLLATE "C", a.attnum`,
    params,
  );
  // NOT NULL is read from the columns: PostgreSQL 18 also records it as a
  // named constraint, and those names need not survive an upgrade from 16/17.
  const constraints = await session.rows<Record<string, unknown>>(
    `SELECT c.relname, con.conname, con.contype::text AS contype, con.condeferrable, con.condeferred, con.convalidated,
            con.confupdtype::text AS on_update, con.confdeltype::text AS on_delete, con.confmatchtype::text AS match_type,
            (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum) AS columns,
            target.relname AS target_table,
            (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum) AS target_columns,
            target_ns.nspname = n.nspname AS same_schema,
            CASE WHEN con.contype = 'c' THEN pg_get_constraintdef(con.oid, true) END AS check_definition
       FROM pg_constraint con
       JOIN pg_class c ON c.oid = con.conrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_class target ON target.oid = con.confrelid
       LEFT JOIN pg_namespace target_ns ON target_ns.oid = target.relnamespace
      WHERE n.nspname = $1 AND starts_with(c.relname, $2) AND con.contype <> 'n'
      ORDER BY c.relname COLLATE "C", con.conname COLLATE "C"`,
    params,
  );
  const indexes = await session.rows<Record<string, unknown>>(
    `SELECT i.relname AS index_name, t.relname AS table_name, am.amname, ix.indisunique, ix.indisprimary, ix.indimmediate,
            ix.indnullsnotdistinct, ix.indnkeyatts, ix.indnatts,
            (SELECT array_agg(pg_get_indexdef(ix.indexrelid, k, true) ORDER BY k) FROM generate_series(1, ix.indnatts::int) AS k) AS keys,
            -- pg_get_indexdef renders a key alone without its sort order,
            -- operator class or collation; each could change what the index
            -- does (a unique index under another collation or opclass is
            -- another constraint). Per key: the order flags, then any
            -- operator class that is not its type's default and any collation
            -- other than none or "C" (every collatable column of ours is "C").
            (SELECT array_agg(concat_ws(' ', ix.indoption[k]::text,
                                        CASE WHEN opc.opcdefault THEN NULL ELSE opc.opcname::text END,
                                        CASE WHEN ix.indcollation[k] IN (0, 'pg_catalog."C"'::regcollation) THEN NULL ELSE coll.collname::text END) ORDER BY k)
               FROM generate_series(0, ix.indnkeyatts - 1) AS k
               JOIN pg_opclass opc ON opc.oid = ix.indclass[k]
               LEFT JOIN pg_collation coll ON coll.oid = ix.indcollation[k]) AS key_options,
            pg_get_expr(ix.indpred, ix.indrelid, true) AS predicate,
            pg_get_expr(ix.indexprs, ix.indrelid, true) AS expressions
       FROM pg_index ix
       JOIN pg_class i ON i.oid = ix.indexrelid
       JOIN pg_class t ON t.oid = ix.indrelid
       JOIN pg_am am ON am.oid = i.relam
       JOIN pg_namespace n ON n.oid = i.relnamespace
      WHERE n.nspname = $1 AND starts_with(t.relname, $2) AND NOT (starts_with(i.relname, '${IGNORED_INDEX_PREFIX}') AND NOT ix.indisunique)
      ORDER BY i.relname COLLATE "C"`,
    params,
  );
  // Triggers, rules, policies, row security, functions and free-standing
  // types could all change what a statement does to rows; a schema of ours
  // has none, on any table.
  const extras = await session.rows<Record<string, unknown>>(
    `SELECT 'trigger' AS kind, c.relname::text || '.' || tg.tgname::text AS name FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND NOT tg.tgisinternal
     UNION ALL
     SELECT 'rule', c.relname::text || '.' || r.rulename::text FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1
     UNION ALL
     SELECT 'policy', c.relname::text || '.' || p.polname::text FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1
     UNION ALL
     SELECT 'row_security', c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND (c.relrowsecurity OR c.relforcerowsecurity)
     UNION ALL
     SELECT 'function', p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
     UNION ALL
     SELECT 'type', t.typname::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname = $1 AND t.typrelid = 0 AND NOT (t.typcategory = 'A' AND EXISTS (SELECT 1 FROM pg_type e WHERE e.oid = t.typelem AND e.typrelid <> 0))
     ORDER BY 1, 2`,
    [schema],
  );
  return JSON.stringify({ relations, columns, constraints, indexes, extras }, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

export type SchemaPresence = 'missing' | 'trusted' | 'untrusted';

/** Over `pg_namespace n`: the schema is owned by the current user (a role lookup by name, cached by the server). */
const SCHEMA_OWNED = 'n.nspowner = quote_ident(current_user)::regrole';
/** Over `pg_namespace n`: PUBLIC holds a privilege on the schema (USAGE or CREATE, the only two a schema has). */
const SCHEMA_GRANTED_TO_PUBLIC = "has_schema_privilege('public', n.oid, 'USAGE, CREATE')";

/**
 * A scalar subquery: whether the schema is still ours alone at its own level
 * (owned by the current user, nothing granted to PUBLIC), for a data unit to
 * read with a statement it runs anyway; it finds the schema by oid, so its
 * cost does not grow with the number of schemas (about 30-40 µs a unit,
 * measured). Without USAGE on the schema no other role reaches its tables;
 * the relation-level checks of schemaPresence walk pg_class and stay with
 * inspection. `schema` must be a store's validated `svc_<hex>` name (it is
 * written as a literal).
 */
export function schemaPrivateSubquery(schema: string): string {
  if (!/^[a-z0-9_]+$/.test(schema)) throw new Error('schemaPrivateSubquery: not a store schema name');
  return `(SELECT ${SCHEMA_OWNED} AND NOT ${SCHEMA_GRANTED_TO_PUBLIC} FROM pg_namespace n WHERE n.oid = '"${schema}"'::regnamespace)`;
}

/**
 * Whether the schema exists and is ours alone: owned by the current user,
 * with no privilege granted to PUBLIC on it or on anything in it, and every
 * relation in it owned by the current user.
 */
export async function schemaPresence(session: PgSession, schema: string): Promise<SchemaPresence> {
  const row = await session.first<{ owned: boolean; public_schema: boolean; foreign_relations: boolean; public_relations: boolean }>(
    `SELECT ${SCHEMA_OWNED} AS owned,
            ${SCHEMA_GRANTED_TO_PUBLIC} AS public_schema,
            EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid AND c.relowner <> n.nspowner) AS foreign_relations,
            EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) AS acl WHERE c.relnamespace = n.oid AND acl.grantee = 0) AS public_relations
       FROM pg_namespace n WHERE n.nspname = $1`,
    [schema],
  );
  if (!row) return 'missing';
  return row.owned && !row.public_schema && !row.foreign_relations && !row.public_relations ? 'trusted' : 'untrusted';
}

/**
 * The revision a drifted schema's meta table still names, for reporting only
 * (a migration state keeps it, as the reference's does): the
 * `applied_revision` of the table's one row when that row names `adapterId`
 * and a revision in `known`, else null. Only for a schema schemaPresence
 * calls trusted; the row is read from a plain table that still has both
 * columns, as text whatever their type now, so no drift aborts the unit.
 */
export async function metaRevisionOf(session: PgSession, schema: string, table: string, adapterId: string, known: readonly bigint[]): Promise<bigint | null> {
  const columns = await session.first<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace ns ON ns.oid = c.relnamespace
      WHERE ns.nspname = $1 AND c.relname = $2 AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND a.attname IN ('adapter_id', 'applied_revision')`,
    [schema, table],
  );
  if (columns?.n !== 2) return null;
  const rows = await session.rows<{ adapter_id: string | null; applied_revision: string | null }>(
    `SELECT "adapter_id"::text AS "adapter_id", "applied_revision"::text AS "applied_revision" FROM ${quoteIdentifier(schema)}.${quoteIdentifier(table)} LIMIT 2`,
  );
  const [row] = rows;
  if (rows.length !== 1 || row?.adapter_id !== adapterId || row.applied_revision === null || !/^[0-9]{1,19}$/.test(row.applied_revision)) return null;
  const revision = BigInt(row.applied_revision);
  return known.includes(revision) ? revision : null;
}

/** Whether the schema holds no relation at all. */
export async function schemaIsEmpty(session: PgSession, schema: string): Promise<boolean> {
  const row = await session.first<{ empty: boolean }>(
    `SELECT NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1) AS empty`,
    [schema],
  );
  return row?.empty ?? true;
}

/** A column as the signature reads it: name, format_type, NOT NULL, collation, identity kind (`a`: GENERATED ALWAYS). */
export type ColumnShape = readonly [name: string, type: string, notNull: boolean, collation: string | null, identity?: 'a'];

/** A constraint: primary key, unique, check (with its definition as pg_get_constraintdef renders it) or foreign key (to "id" of `references`, restrict both ways, not deferrable). */
export interface ConstraintShape {
  readonly name: string;
  readonly kind: 'p' | 'u' | 'c' | 'f';
  readonly columns: readonly string[];
  readonly check?: string;
  readonly references?: string;
}

/** An index: its keys as pg_get_indexdef renders them one by one; btree unless `method` says otherwise. */
export interface IndexShape {
  readonly name: string;
  readonly keys: readonly string[];
  /** Per key, pg_index.indoption (1 DESC, 2 NULLS FIRST); 0, ascending with nulls last, when absent. Operator classes and collations are always the defaults. */
  readonly order?: readonly number[];
  readonly unique?: true;
  readonly primary?: true;
  readonly method?: string;
  readonly predicate?: string;
  readonly expressions?: string;
}

export interface TableShape {
  readonly name: string;
  /** In column order. */
  readonly columns: readonly ColumnShape[];
  readonly constraints: readonly ConstraintShape[];
  readonly indexes: readonly IndexShape[];
}

/** What a schema of ours holds: its tables and the sequences behind identity columns; no views, functions, triggers, rules, policies or types. */
export interface CatalogShape {
  readonly tables: readonly TableShape[];
  readonly sequences: readonly string[];
}

/** Byte order, as `COLLATE "C"` sorts (identifiers here are ASCII). */
const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The signature schemaSignature reads from a schema holding exactly `shape`
 * (with `tablePrefix` null): the same rows, members and order.
 */
export function shapeSignature(shape: CatalogShape): string {
  const tables = [...shape.tables].sort((a, b) => byName(a.name, b.name));
  const relations = [...tables.map((table) => ({ relname: table.name, relkind: 'r' })), ...shape.sequences.map((name) => ({ relname: name, relkind: 'S' }))]
    .sort((a, b) => byName(a.relname, b.relname))
    .map((relation) => ({ ...relation, rls: false }));
  const columns = tables.flatMap((table) =>
    table.columns.map(([attname, type, notNull, collation, identity], index) => ({
      relname: table.name,
      attname,
      type,
      attnotnull: notNull,
      identity: identity ?? '',
      generated: '',
      atthasdef: false,
      collname: collation,
      position: String(index + 1),
    })),
  );
  const constraints = tables.flatMap((table) =>
    [...table.constraints]
      .sort((a, b) => byName(a.name, b.name))
      .map((constraint) => {
        const foreign = constraint.kind === 'f';
        return {
          relname: table.name,
          conname: constraint.name,
          contype: constraint.kind,
          condeferrable: false,
          condeferred: false,
          convalidated: true,
          on_update: foreign ? 'r' : ' ',
          on_delete: foreign ? 'r' : ' ',
          match_type: foreign ? 's' : ' ',
          columns: constraint.columns,
          target_table: foreign ? (constraint.references ?? null) : null,
          target_columns: foreign ? ['id'] : null,
          same_schema: foreign ? true : null,
          check_definition: constraint.check ?? null,
        };
      }),
  );
  const indexes = tables
    .flatMap((table) =>
      table.indexes
        .filter((index) => !index.name.startsWith(IGNORED_INDEX_PREFIX))
        .map((index) => ({
          index_name: index.name,
          table_name: table.name,
          amname: index.method ?? 'btree',
          indisunique: index.unique === true,
          indisprimary: index.primary === true,
          indimmediate: true,
          indnullsnotdistinct: false,
          indnkeyatts: index.keys.length,
          indnatts: index.keys.length,
          keys: index.keys,
          key_options: index.keys.map((_key, k) => String(index.order?.[k] ?? 0)),
          predicate: index.predicate ?? null,
          expressions: index.expressions ?? null,
        })),
    )
    .sort((a, b) => byName(a.index_name, b.index_name));
  return JSON.stringify({ relations, columns, constraints, indexes, extras: [] });
}

/**
 * How PostgreSQL quotes each name where it renders an identifier (index
 * keys): quote_ident, asked of the server so that its own keyword list
 * decides; a read-only query.
 */
export async function quotedIdentifiers(connection: PostgresConnection, names: Iterable<string>): Promise<Map<string, string>> {
  const distinct = [...new Set(names)];
  if (distinct.length === 0) return new Map();
  const rows = await connection.transaction('read', (session) =>
    session.rows<{ name: string; quoted: string }>('SELECT n AS name, quote_ident(n) AS quoted FROM unnest($1::text[]) AS n', [distinct]),
  );
  return new Map(rows.map((row) => [row.name, row.quoted]));
}
