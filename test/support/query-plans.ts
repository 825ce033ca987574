// Query-plan probes for the storage tests: a SQLite database whose statements
// record EXPLAIN QUERY PLAN (with their parameters) before they run, and a
// PostgreSQL session that explains each row query instead of running it.
// Tests assert the shapes of plans, never timings.

import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { PgSession } from '../../src/aipcs/storage/postgres/connection.js';
import type { SqliteDatabase } from '../../src/aipcs/storage/sqlite/connection.js';
import { SqliteDataTx } from '../../src/aipcs/storage/sqlite/service-data.js';
import { openSqliteStorage } from '../../src/aipcs/storage/sqlite/index.js';
import type { JsonObject } from '../../src/common/json.js';
import { appOver, manifest, type TestApp } from '../conformance/harness.js';

type StatementMethod = 'all' | 'get' | 'run';

/**
 * `db` with every prepared statement recording its plan into `plans` each
 * time one of `methods` runs it; the statement then runs as usual.
 */
export function explainingSqlite(db: SqliteDatabase, plans: string[][], methods: readonly StatementMethod[] = ['all', 'get', 'run']): SqliteDatabase {
  return new Proxy(db, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property);
      if (property !== 'prepare') return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      return (sql: string) => {
        const statement = target.prepare(sql);
        return new Proxy(statement, {
          get(inner, name) {
            const method: unknown = Reflect.get(inner, name);
            if (typeof method !== 'function') return method;
            if (!(methods as readonly (string | symbol)[]).includes(name)) return (method as (...args: unknown[]) => unknown).bind(inner);
            return (...params: unknown[]) => {
              plans.push((target.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((row) => row.detail));
              return (method as (...args: unknown[]) => unknown).apply(inner, params);
            };
          },
        });
      };
    },
  });
}

/**
 * A SQLite data root in a new temp folder (pushed onto `folders` for the
 * caller to remove) holding one service of `document`, seeded, designed and
 * materialised as agent-a, then filled by `fill` through the application.
 * The storage is closed again before this returns, so the store can be
 * opened read-only to explain the statements the adapter runs on it.
 */
export async function materialisedSqliteService<T>(
  folders: string[],
  document: JsonObject,
  fill: (app: TestApp, serviceId: string) => Promise<T>,
): Promise<{ dataRoot: string; filled: T }> {
  const base = mkdtempSync(join(tmpdir(), 'aipcs-plans-'));
  folders.push(base);
  const dataRoot = join(base, 'data');
  const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
  try {
    const app = appOver(storage);
    const serviceId = (await app.lifecycle.seed({ domainName: 'plans', domainClass: 'test', intentDescription: 'Query plans.', idempotencyKey: 's' }))['service_id'] as string;
    await app.lifecycle.design({ serviceId, manifest: manifest(document), idempotencyKey: 'd' });
    await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    return { dataRoot, filled: await fill(app, serviceId) };
  } finally {
    await storage.close();
  }
}

/**
 * The one service store under `dataRoot`, opened read-only, and a unit of
 * work over it as `principalId` whose statements run by `methods` record
 * their plans into `plans`. The caller closes `db`.
 */
export function explainingStore(dataRoot: string, plans: string[][], principalId = 'agent-a', methods: readonly StatementMethod[] = ['all']): { db: Database.Database; tx: SqliteDataTx } {
  const stores = join(dataRoot, 'service-stores');
  const db = new Database(join(stores, readdirSync(stores).find((name) => name.endsWith('.sqlite')) as string), { readonly: true, fileMustExist: true });
  db.defaultSafeIntegers(true);
  return { db, tx: new SqliteDataTx(explainingSqlite(db, plans, methods), principalId) };
}

/** A node of PostgreSQL's `EXPLAIN (FORMAT JSON)` plan, as far as the tests read it. */
export interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Relation Name'?: string;
  readonly 'Index Name'?: string;
  readonly 'Plan Rows'?: number;
  readonly Plans?: readonly PlanNode[];
}

/** The plan's nodes, depth first, the plan itself first. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

/**
 * A session that explains each row query instead of running it (and answers
 * no rows); single-row queries (`first`), such as the range probes, still run.
 */
export class ExplainingSession extends PgSession {
  readonly plans: PlanNode[] = [];

  /** Records the plan of `sql` instead of running it. */
  protected async explain(sql: string, params: readonly unknown[]): Promise<void> {
    const [row] = await super.rows<{ 'QUERY PLAN': readonly { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
    const plan = row?.['QUERY PLAN'][0]?.Plan;
    if (plan === undefined) throw new Error('no plan');
    this.plans.push(plan);
  }

  override async rows<R>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    await this.explain(sql, params);
    return [];
  }

  override async arrayRows(sql: string, params: readonly unknown[] = []): Promise<unknown[][]> {
    await this.explain(sql, params);
    return [];
  }
}

/** As ExplainingSession, but single-row queries (`first`) are explained too, and answer no row. */
export class ExplainingFirstSession extends ExplainingSession {
  override async first<R>(sql: string, params: readonly unknown[] = []): Promise<R | undefined> {
    await this.explain(sql, params);
    return undefined;
  }
}
