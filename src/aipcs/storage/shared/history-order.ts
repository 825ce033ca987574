// The order in which import staging appends an artefact's history: by time,
// but never a record's event before an earlier version of that record. The
// artefact holds no insertion order; occurred_at stands in for it, and a
// process whose wall clock was behind can have written version 2 of a record
// "before" version 1. Each event is ordered at the latest time of its
// record's chain so far, which is its own time whenever clocks agree.
// Pure; used by both backends' staging writers.

import type { HistoryEvent, Micros } from '../../core/ports.js';

export class HistoryOrder {
  private entityName: string | null = null;
  private recordId: string | null = null;
  private latest: Micros = 0n;

  /**
   * The sort time of `event`. Events must come in artefact order (each
   * record's chain together, versions ascending), as staging receives them.
   */
  of(event: HistoryEvent): Micros {
    if (event.entityName !== this.entityName || event.recordId !== this.recordId) {
      this.entityName = event.entityName;
      this.recordId = event.recordId;
      this.latest = event.occurredAt;
    } else if (event.occurredAt > this.latest) {
      this.latest = event.occurredAt;
    }
    return this.latest;
  }
}
