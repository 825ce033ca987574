// Import staging on SQLite: the batched writes of one staging unit. Rows go
// through the store's ordinary prepared inserts (SQLite runs in process, so
// a statement per row costs no round trip); history is held in a temporary
// table and appended in time order by one INSERT … SELECT, so the store, not
// the process, sorts it and memory stays bounded whatever the size.

import type { EntityLayout, HistoryEvent, MembershipRow, Micros, StagingWriter, StoredBranch, StoredRecord, WriteFence } from '../../core/ports.js';
import { encodeFieldSet } from '../shared/record-codec.js';
import { HistoryOrder } from '../shared/history-order.js';
import { prepared, type SqliteDatabase } from './connection.js';
import { SqliteDataTx } from './service-data.js';

const HELD_DDL = `CREATE TEMP TABLE __aipcs_held_history (
  arrival INTEGER PRIMARY KEY,
  entity_name TEXT NOT NULL,
  record_id TEXT NOT NULL,
  record_version INTEGER NOT NULL,
  event_kind TEXT NOT NULL,
  before_json TEXT,
  after_json TEXT,
  occurred_at INTEGER NOT NULL,
  order_at INTEGER NOT NULL
) STRICT`;

export class SqliteStagingTx implements StagingWriter {
  private readonly tx: SqliteDataTx;
  private held = false;
  private arrival = 0n;
  private readonly order = new HistoryOrder();

  constructor(
    private readonly db: SqliteDatabase,
    private readonly principalId: string,
  ) {
    this.tx = new SqliteDataTx(db, principalId);
  }

  setFence(fence: WriteFence): Promise<void> {
    return this.tx.setFence(fence);
  }

  async insertRecords(entity: EntityLayout, records: readonly StoredRecord[]): Promise<void> {
    for (const record of records) await this.tx.insertRecord(entity, record);
  }

  async insertBranches(branches: readonly StoredBranch[]): Promise<void> {
    for (const branch of branches) await this.tx.insertBranch(branch);
  }

  async putMemberships(rows: readonly MembershipRow[], assignedAt: Micros): Promise<void> {
    for (const row of rows) await this.tx.putMembership(row.entityName, row.recordId, row.branchId, row.role, assignedAt);
  }

  async holdHistory(events: readonly HistoryEvent[]): Promise<void> {
    if (!this.held) {
      // Temporary DDL is transactional: a unit that rolls back leaves nothing.
      this.db.exec('DROP TABLE IF EXISTS temp.__aipcs_held_history');
      this.db.exec(HELD_DDL);
      this.held = true;
    }
    const insert = prepared(
      this.db,
      `INSERT INTO temp.__aipcs_held_history (arrival, entity_name, record_id, record_version, event_kind, before_json, after_json, occurred_at, order_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const event of events) {
      insert.run(this.arrival++, event.entityName, event.recordId, event.recordVersion, event.kind, encodeFieldSet(event.before), encodeFieldSet(event.after), event.occurredAt, this.order.of(event));
    }
  }

  async appendHeldHistory(): Promise<void> {
    if (!this.held) return;
    // Rows are inserted in the SELECT's order, so event_sequence follows time (kept per record), then arrival.
    this.db
      .prepare(
        `INSERT INTO main.__aipcs_record_history (principal_id, entity_name, record_id, record_version, event_kind, before_json, after_json, occurred_at)
         SELECT ?, entity_name, record_id, record_version, event_kind, before_json, after_json, occurred_at FROM temp.__aipcs_held_history ORDER BY order_at, arrival`,
      )
      .run(this.principalId);
    this.db.exec('DROP TABLE temp.__aipcs_held_history');
    this.held = false;
  }
}
