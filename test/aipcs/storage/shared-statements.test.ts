// The statements both backends run from one text (service store and
// registry): every placeholder has its parameter, in order, and PostgreSQL's
// numbering of them is exactly `?` → `$n`.
// The statements' behaviour is the conformance suite's, on both backends.

import { describe, expect, it } from 'vitest';
import type { StoredBranch } from '../../../src/aipcs/core/ports.js';
import * as statements from '../../../src/aipcs/storage/shared/statements.js';
import { numberedPlaceholders, type Statement } from '../../../src/aipcs/storage/shared/statements.js';
import { registryStatements } from '../../../src/aipcs/storage/shared/registry-statements.js';

const table = (name: string): string => `"${name}"`;
const branch: StoredBranch = {
  id: 'b1',
  slug: 's',
  title: 'T',
  intent: 'I',
  branchType: null,
  parentId: null,
  status: 'active',
  retrievalSummary: null,
  createdAt: 1n,
  updatedAt: 2n,
  branchRevision: 3n,
};
const after = { branchId: 'b', entityName: 'note', recordId: 'r', role: 'primary' } as const;

const every: Record<string, Statement> = {
  branchById: statements.branchById(table, 'p', 'b1'),
  branchBySlug: statements.branchBySlug(table, 'p', 's'),
  'branchPage, no filter': statements.branchPage(table, 'p', { status: null, branchType: null, parentId: null, afterId: null, limit: 5 }),
  'branchPage, every filter': statements.branchPage(table, 'p', { status: 'active', branchType: 'epic', parentId: 'b0', afterId: 'a', limit: 5 }),
  insertBranch: statements.insertBranch(table, 'p', branch),
  updateBranch: statements.updateBranch(table, 'p', branch),
  membershipRole: statements.membershipRole(table, 'p', 'note', 'r', 'b'),
  primaryBranchOf: statements.primaryBranchOf(table, 'p', 'note', 'r'),
  putMembership: statements.putMembership(table, 'p', 'note', 'r', 'b', 'related', 4n),
  removeMembership: statements.removeMembership(table, 'p', 'note', 'r', 'b'),
  'membershipPage, first': statements.membershipPage(table, 'p', null, 10),
  'membershipPage, after a row': statements.membershipPage(table, 'p', after, 10),
  replayByKey: statements.replayByKey(table, 'p', 'k'),
  insertReplay: statements.insertReplay(table, 'p', { idempotencyKey: 'k', kind: 'create', fingerprint: 'f', result: { id: 'x' }, completedAt: 5n }),
  recentBranches: statements.recentBranches(table, 'p', 10),
  recordById: statements.recordById(table, 'p', 'note', 'r'),
  writeFenceRow: statements.writeFenceRow(table),
  appendHistoryEvent: statements.appendHistoryEvent(table, 'p', { entityName: 'note', recordId: 'r', recordVersion: 2n, kind: 'update', before: { title: 'a' }, after: { title: 'b' }, occurredAt: 6n }),
  removeRecordMemberships: statements.removeRecordMemberships(table, 'p', 'note', 'r'),
};

describe('shared statements', () => {
  it.each(Object.entries(every))('%s: one parameter per placeholder, and no placeholder inside a literal', (_name, statement) => {
    expect(statement.sql.split('?').length - 1).toBe(statement.params.length);
    // Literals in these statements hold no `?`, so numbering cannot reach inside one.
    for (const literal of statement.sql.match(/'[^']*'/g) ?? []) expect(literal).not.toContain('?');
    const numbered = numberedPlaceholders(statement.sql);
    expect(numbered).not.toContain('?');
    expect([...numbered.matchAll(/\$(\d+)/g)].map((match) => Number(match[1]))).toEqual(statement.params.map((_value, index) => index + 1));
  });

  it.each(Object.entries(registryStatements(table)))('registry %s: no placeholder inside a literal, numbered $1..$n', (_name, sql) => {
    for (const literal of sql.match(/'[^']*'/g) ?? []) expect(literal).not.toContain('?');
    const count = sql.split('?').length - 1;
    expect([...numberedPlaceholders(sql).matchAll(/\$(\d+)/g)].map((match) => Number(match[1]))).toEqual(Array.from({ length: count }, (_value, index) => index + 1));
  });

  it('binds the page filters in the order of their placeholders', () => {
    const page = every['branchPage, every filter'] as Statement;
    expect(page.sql).toMatch(/"principal_id" = \? AND "status" = \? AND "branch_type" = \? AND "parent_branch_id" = \? AND "id" > \? ORDER BY "id" LIMIT \?$/);
    expect(page.params).toEqual(['p', 'active', 'epic', 'b0', 'a', 5n]);
  });
});
