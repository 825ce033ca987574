// SQLite branch queries at scale: the parent-cycle check of a branch update
// walks the chain by one primary-key lookup per level (with the principal's
// indexes usable in the recursive step, SQLite 3.53 scanned every branch of
// the principal per level: quadratic, 12 s for a chain of 8000 with the
// server blocked), and a branch list filtered by status or type walks an
// index of that column (it walked every branch: 471 ms at 300 000 for one
// page). Checked with EXPLAIN QUERY PLAN on the statements the adapter runs.

import { rmSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/common/json.js';
import { memoManifest } from '../../conformance/memo-manifest.js';
import { explainingStore, materialisedSqliteService } from '../../support/query-plans.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

it('walks a branch parent chain by id, one lookup per level, and lists by status or type through their indexes', async () => {
  const { dataRoot, filled: chain } = await materialisedSqliteService(folders, memoManifest(), async (app, serviceId) => {
    const chain: string[] = [];
    for (let i = 0; i < 4; i++) {
      const made = await app.branches.create({
        serviceId,
        slug: `level-${i}`,
        title: `Level ${i}`,
        intent: 'I',
        branchType: null,
        parentBranchId: chain.at(-1) ?? null,
        retrievalSummary: null,
        idempotencyKey: `b${i}`,
      });
      chain.push((made['branch'] as JsonObject)['id'] as string);
    }
    return chain;
  });
  const plans: string[][] = [];
  const { db, tx } = explainingStore(dataRoot, plans, 'agent-a', ['get', 'all']);
  try {
    expect(await tx.branchReachesByParents(chain[3] as string, chain[0] as string)).toBe(true);
    expect(await tx.branchReachesByParents(chain[0] as string, chain[3] as string)).toBe(false);
    expect(plans).toHaveLength(2);
    for (const plan of plans.splice(0)) {
      const step = plan.slice(plan.indexOf('RECURSIVE STEP'));
      expect(step.some((detail) => /^SEARCH b USING (INDEX sqlite_autoindex___aipcs_memory_branch_1|PRIMARY KEY) \(id=\?\)$/.test(detail)), plan.join(' | ')).toBe(true);
      expect(step.filter((detail) => detail.includes('principal_id')), plan.join(' | ')).toEqual([]);
    }
    const filters = [
      { status: 'archived' as const, branchType: null },
      { status: null, branchType: 'epic' },
      { status: 'active' as const, branchType: 'epic' },
    ];
    for (const filter of filters) {
      const listed = await tx.listBranches({ ...filter, parentId: null, afterId: chain[0] as string, limit: 10 });
      expect(listed.map((branch) => branch.id)).toEqual([]);
      const listPlans = plans.splice(0);
      expect(listPlans).toHaveLength(1);
      const detail = (listPlans[0] as string[]).join(' | ');
      expect(detail).toMatch(/^SEARCH __aipcs_memory_branch USING INDEX __aipcs_memory_branch_(status|type) \(principal_id=\? AND (status|branch_type)=\? AND id>\?\)$/);
    }
  } finally {
    db.close();
  }
});
