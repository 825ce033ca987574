// Black-box differential of the two storage backends at the MCP level: one
// `aipcs serve --profile sqlite` and one `aipcs serve --profile postgresql`,
// both driven through the MCP SDK's stdio client with the same sequence of
// tool calls, and every envelope text compared after normalising only what
// must differ: the backend name, server timestamps (mapped to the order in
// which each server first showed them) and cursors' opaque bytes. Each server
// process loads a small preload (NODE_OPTIONS=--import) that makes
// crypto.randomUUID deterministic and lets the test move Date.now forward, so
// both backends mint the same service, record and branch ids: pages ordered
// by id, summaries and scans must then match byte for byte.
//
// The sequence reaches the contract's edges: every field type at and beyond
// its bounds (±2^53, ±2^63, -0, 1e308, 1.0 for integers; NUL, lone
// surrogates, emoji, exactly 16 KiB; 256 members of 256 characters),
// relationships to missing and deleted records, unique indexes, idempotent
// replays and changed fingerprints, stale versions and revisions, branches
// (slugs, parents, cycles, roles, primary moves, non-active branches), history
// and record pages with writes between pages, summary facets with ties and
// non-ASCII values, maintenance scans after the clock moved, an evolve that
// flips retrieval modes and appends fields read back on old records and old
// cursors, field names PostgreSQL reserves for system columns, a restart of
// both servers, and service_list / bootstrap ordering. A seeded random walk
// over all data tools follows (AIPCS_DIFF_SEED, AIPCS_DIFF_STEPS), then
// materialise and evolve killed at each fault checkpoint and resumed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { serverManaged } from '../../support/manifests.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters } from '../../support/postgres.js';

const SEED = Number(process.env['AIPCS_DIFF_SEED'] ?? 7);
const STEPS = Number(process.env['AIPCS_DIFF_STEPS'] ?? 160);
const PRINCIPAL = 'agent-diff';

// ---------------------------------------------------------------- servers

/** Deterministic ids and a movable wall clock for the server process. */
const PRELOAD = `
import crypto from 'node:crypto';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
let counter = 0;
const seed = process.env.AIPCS_DIFF_ID_SEED ?? 'diff';
crypto.randomUUID = () => {
  counter++;
  const h = crypto.createHash('sha256').update(seed + ':' + counter).digest('hex');
  const variant = ((parseInt(h[16], 16) & 3) | 8).toString(16);
  return h.slice(0, 8) + '-' + h.slice(8, 12) + '-4' + h.slice(13, 16) + '-' + variant + h.slice(17, 20) + '-' + h.slice(20, 32);
};
syncBuiltinESMExports();
const offsetFile = process.env.AIPCS_DIFF_CLOCK_FILE;
if (offsetFile) {
  const realNow = Date.now.bind(Date);
  Date.now = () => {
    let offset = 0;
    try { offset = Number(fs.readFileSync(offsetFile, 'utf8')) || 0; } catch { offset = 0; }
    return realNow() + offset;
  };
}
`;

/** A JSON number written exactly as given (1.0, 9223372036854775808, -0), which JSON.stringify cannot express. */
interface RawNumber {
  readonly $raw: string;
}
const raw = (text: string): RawNumber => ({ $raw: text });
const isRaw = (value: unknown): value is RawNumber =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 1 && typeof (value as { $raw?: unknown }).$raw === 'string';

/** The SDK's stdio transport, writing RawNumber placeholders as their literal text. */
class RawNumberTransport extends StdioClientTransport {
  override send(message: JSONRPCMessage): Promise<void> {
    const literals: string[] = [];
    const text = JSON.stringify(message, (_key, value: unknown) => {
      if (!isRaw(value)) return value;
      literals.push(value.$raw);
      return `@@raw#${literals.length - 1}@@`;
    }).replace(/"@@raw#(\d+)@@"/g, (_match, index: string) => literals[Number(index)] ?? 'null');
    const stdin = (this as unknown as { _process?: { stdin?: NodeJS.WritableStream } })._process?.stdin;
    if (!stdin) return Promise.reject(new Error('not connected'));
    return new Promise((resolve) => {
      if (stdin.write(`${text}\n`)) resolve();
      else stdin.once('drain', () => resolve());
    });
  }
}

interface Server {
  call(name: string, args: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

async function startServer(args: string[], env: Record<string, string>): Promise<Server> {
  const client = new Client({ name: 'aipcs-differential', version: '1.0.0' });
  const transport = new RawNumberTransport({
    command: process.execPath,
    args: [aipcsBin(), 'serve', ...args],
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', ...env },
    stderr: 'pipe',
  });
  await client.connect(transport);
  return {
    async call(name, toolArgs) {
      const result = await client.callTool({ name, arguments: toolArgs }, CallToolResultSchema, { timeout: 60_000 });
      const content = result.content as { type: string; text: string }[];
      const text = content[0]?.text ?? '';
      if (content.length !== 1 || (JSON.parse(text) as { ok: boolean }).ok === result.isError) throw new Error(`malformed tool result for ${name}`);
      return text;
    },
    close: () => client.close(),
  };
}

interface Envelope {
  ok: boolean;
  result: Record<string, unknown> | null;
  error: { code: string } | null;
}

interface Step {
  readonly a: Envelope;
  readonly b: Envelope;
}

/** Both servers, started on the same ids; `call` sends one request to each and records any difference. */
class Pair {
  readonly diffs: string[] = [];
  /** How often each tool answered each code (on SQLite), to show what the sequence reached. */
  readonly outcomes = new Map<string, number>();
  private readonly firstSeen: readonly [Map<string, number>, Map<string, number>] = [new Map(), new Map()];
  private step = 0;
  private restarts = 0;

  private constructor(
    private servers: [Server, Server],
    private readonly launch: (idSeed: string, env?: Record<string, string>) => Promise<[Server, Server]>,
    private readonly clockFile: string,
  ) {}

  static async start(launch: (idSeed: string, env?: Record<string, string>) => Promise<[Server, Server]>, clockFile: string): Promise<Pair> {
    return new Pair(await launch('start'), launch, clockFile);
  }

  private normalise(text: string, side: 0 | 1): string {
    const seen = this.firstSeen[side];
    return text
      .replace(/"(created_at|updated_at|occurred_at|last_activity_at|materialised_at)":"([^"]*)"/g, (_match, key: string, value: string) => {
        if (!seen.has(value)) seen.set(value, seen.size);
        return `"${key}":"T${seen.get(value) ?? -1}"`;
      })
      .replace(/"next_cursor":"[A-Za-z0-9_-]+"/g, '"next_cursor":"CURSOR"')
      .replace(/"backend":"(sqlite|postgresql)"/g, '"backend":"BACKEND"');
  }

  async each(name: string, argsA: Record<string, unknown>, argsB: Record<string, unknown>, label = ''): Promise<Step> {
    this.step++;
    // A server killed by a fault checkpoint answers nothing; both must have died.
    const settle = (answer: Promise<string>) => answer.catch(() => '{"ok":false,"result":null,"error":{"code":"no answer"}}');
    const [textA, textB] = await Promise.all([settle(this.servers[0].call(name, argsA)), settle(this.servers[1].call(name, argsB))]);
    const normalA = this.normalise(textA, 0);
    const normalB = this.normalise(textB, 1);
    const envelope = JSON.parse(textA) as Envelope;
    const outcome = `${name}:${envelope.ok ? 'ok' : (envelope.error?.code ?? '?')}`;
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
    if (normalA !== normalB) this.diffs.push(`step ${this.step} ${name} ${label}\n  sqlite:     ${normalA.slice(0, 600)}\n  postgresql: ${normalB.slice(0, 600)}`);
    return { a: JSON.parse(textA) as Envelope, b: JSON.parse(textB) as Envelope };
  }

  call(name: string, args: Record<string, unknown>, label = ''): Promise<Step> {
    return this.each(name, args, args, label);
  }

  /** Pages a list, search, history or branch list to its end, each server with its own cursors; `between` runs after each page. */
  async pageAll(name: string, args: Record<string, unknown>, between?: () => Promise<void>): Promise<void> {
    let cursorA: unknown = null;
    let cursorB: unknown = null;
    for (let page = 0; page < 40; page++) {
      const step = await this.each(name, { ...args, ...(cursorA ? { cursor: cursorA } : {}) }, { ...args, ...(cursorB ? { cursor: cursorB } : {}) }, `page ${page}`);
      cursorA = step.a.result?.['next_cursor'];
      cursorB = step.b.result?.['next_cursor'];
      if (!cursorA || !cursorB) return;
      if (between) await between();
    }
  }

  advanceDays(days: number): void {
    writeFileSync(this.clockFile, String(Number(readFileSync(this.clockFile, 'utf8')) + days * 86_400_000));
  }

  /** Restarts both servers on the same storage (with fresh ids), optionally with extra environment such as a fault checkpoint. */
  async restart(env: Record<string, string> = {}): Promise<void> {
    await this.close();
    this.restarts++;
    this.servers = await this.launch(`restart-${this.restarts}`, env);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.servers.map((server) => server.close()));
  }
}

// ---------------------------------------------------------------- manifest

const attr = (name: string, type: string, extra: Record<string, unknown> = {}) => ({ name, type, ...extra });

function manifest(): Record<string, unknown> {
  return {
    manifest_version: 2,
    schema_version: 1,
    entities: [
      { name: 'project', attributes: [...serverManaged(), attr('name', 'string', { required: true }), attr('code', 'string'), attr('parent', 'uuid')] },
      {
        name: 'item',
        attributes: [
          ...serverManaged(),
          attr('title', 'string', { required: true }),
          attr('s', 'string'),
          attr('note', 'string', { retrieval_mode: 'annotation' }),
          attr('n', 'integer'),
          attr('x', 'number'),
          attr('b', 'boolean'),
          attr('d', 'datetime'),
          attr('u', 'uuid'),
          attr('tags', 'string_list', { retrieval_mode: 'membership' }),
          attr('plain', 'string_list'),
          attr('status', 'string', { allowed_values: ['active', 'superseded', 'é', 'Ω', 'z'] }),
          attr('confidence', 'number'),
          attr('valid_until', 'datetime'),
          attr('superseded_by', 'uuid'),
          attr('provenance_source', 'string'),
          attr('source_ref', 'uuid'),
          attr('scope', 'string'),
          attr('ai', 'integer', { allowed_values: [1, -5, raw('9223372036854775807')] }),
          attr('an', 'number', { allowed_values: [1, 2.5] }),
          attr('ci', 'integer'),
          attr('xmin', 'string'),
          attr('ctid', 'string_list', { retrieval_mode: 'membership' }),
        ],
      },
    ],
    relationships: [
      { name: 'item_project', from: { entity: 'item', field: 'u' }, to: { entity: 'project', field: 'id' }, on_delete: 'restrict' },
      { name: 'project_parent', from: { entity: 'project', field: 'parent' }, to: { entity: 'project', field: 'id' }, on_delete: 'restrict' },
    ],
    indices: [
      { name: 'project_code_u', entity: 'project', fields: ['code'], unique: true },
      { name: 'item_n_s', entity: 'item', fields: ['n', 's', 'xmin'], unique: false },
      { name: 'item_ci_u', entity: 'item', fields: ['ci'], unique: true },
    ],
    query_patterns: ['find by tag'],
    discovery_facets: ['s', 'n', 'x', 'b', 'd', 'u', 'tags', 'plain', 'status', 'confidence', 'id', 'title', 'xmin', 'ctid']
      .map((field) => ({ entity: 'item', field }))
      .concat([{ entity: 'project', field: 'name' }]),
    retrieval_guidance: 'Guide ✓',
    migration_history: [],
  };
}

/** The adjacent manifest: annotation made filterable, plain list made a membership one, a field and a facet appended. */
function manifestV2(): Record<string, unknown> {
  const next = manifest() as { entities: { attributes: Record<string, unknown>[] }[]; discovery_facets: unknown[] } & Record<string, unknown>;
  next['schema_version'] = 2;
  next['migration_history'] = [{ from_schema_version: 1, to_schema_version: 2, operations: ['flip retrieval modes'] }];
  const item = next.entities[1]!.attributes;
  for (const attribute of item) {
    if (attribute['name'] === 'note') attribute['retrieval_mode'] = null;
    if (attribute['name'] === 'plain') attribute['retrieval_mode'] = 'membership';
  }
  item.push(attr('late', 'string'), attr('cmax', 'boolean'));
  next.discovery_facets.push({ entity: 'item', field: 'late' }, { entity: 'item', field: 'note' });
  return next;
}

// ---------------------------------------------------------------- sequences

const strings = ['', ' ', '  pad  ', 'a\u0000b', '\ud800', '\udc00x', '😀', 'é', 'e\u0301', '\uff01', 'x'.repeat(16384), 'é'.repeat(8192), 'é'.repeat(8193), '😀'.repeat(4096), '😀'.repeat(4097), '\u2028', 'Ω', 'Z', '\t tab', '\u3000ideo\u3000'];
const numbers: Record<string, string[]> = {
  n: ['9223372036854775807', '-9223372036854775808', '9223372036854775808', '-9223372036854775809', '0', '-0', '1.0', '1e2', '9007199254740993'],
  x: ['9007199254740992', '-9007199254740992', '9007199254740993', '1e308', '-1e308', '1.7976931348623157e308', '1e309', '-0', '-0.0', '0.0', '1.0', '5e-324', '2.5', '1', '123456789012345678901234567890'],
  ai: ['1', '1.0', '-5', '9223372036854775807', '2'],
  an: ['1', '1.0', '2.5', '2.50', '3'],
  ci: ['1', '1', '-0'],
};
const datetimes = [
  '2030-01-01T00:00:00Z',
  '2030-01-01T00:00:00+00:00',
  '2030-01-01 00:00:00Z',
  '20300101T000000Z',
  '2030-01-01T00:00Z',
  '2030-01-01T00:00:00.123456789Z',
  '2030-01-01',
  '2030-01-01T00:00:00+01:00',
  '2030-01-01T00:00:00-00:00',
  '2030-02-30T00:00:00Z',
  '0001-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999999Z',
  '2020-01-01T00:00:00Z',
];
const lists = [[], ['a'], ['a', 'a'], [''], ['x'.repeat(256)], ['x'.repeat(257)], ['😀'.repeat(256)], Array.from({ length: 256 }, (_, i) => `m${i}`), Array.from({ length: 257 }, (_, i) => `m${i}`), [' a ', 'a'], ['é', 'e\u0301', 'Ω', '\uff01', '😀', 'Z', 'a']];

async function scripted(pair: Pair): Promise<{ sid: string; items: string[]; branches: string[] }> {
  const ids: string[] = [];
  for (const [i, name] of ['zeta', 'alpha', 'mid', 'alpha'].entries()) {
    const seeded = await pair.call('aipcs_service_seed', { domain_name: name, domain_class: `c${i}`, intent_description: `Intent ${i} ✓`, idempotency_key: `seed-${i}` });
    if (seeded.a.ok) ids.push(String(seeded.a.result?.['service_id']));
  }
  await pair.call('aipcs_service_seed', { domain_name: 'zeta', domain_class: 'other', intent_description: 'x', idempotency_key: 'seed-0' });
  const sid = ids[0]!;
  await pair.call('aipcs_record_list', { service_id: sid, entity_name: 'item' });
  await pair.call('aipcs_service_materialise', { service_id: sid, expected_service_revision: 1, expected_schema_version: 1, idempotency_key: 'mat-0' });
  await pair.call('aipcs_service_design', { service_id: sid, schema: manifest(), idempotency_key: 'seed-1' });
  for (const key of ['design-1', 'design-1', 'design-2']) await pair.call('aipcs_service_design', { service_id: sid, schema: manifest(), idempotency_key: key });
  await pair.call('aipcs_bootstrap', {});
  for (const [revision, key] of [[2, 'mat-1'], [2, 'mat-1'], [3, 'mat-2'], [2, 'mat-3']] as const) {
    await pair.call('aipcs_service_materialise', { service_id: sid, expected_service_revision: revision, expected_schema_version: 1, idempotency_key: key });
  }
  await pair.call('aipcs_service_list', { limit: 2 });

  let k = 0;
  const create = async (entity: string, record: Record<string, unknown>, key = `c-${++k}`) => {
    const step = await pair.call('aipcs_record_create', { service_id: sid, entity_name: entity, record, idempotency_key: key }, key);
    return (step.a.result?.['record'] as { id: string; record_version: number } | undefined) ?? undefined;
  };
  const p1 = (await create('project', { name: 'P1', code: 'c1' }))!.id;
  const p2 = (await create('project', { name: 'P2', code: 'c2', parent: p1 }))!.id;
  await create('project', { name: 'P3', code: 'c1' });
  for (const [field, values] of Object.entries(numbers)) for (const value of values) await create('item', { title: `t${k}`, [field]: raw(value) });
  for (const s of strings) await create('item', { title: `t${k}`, s, xmin: s });
  for (const s of strings.slice(0, 10)) await create('item', { title: s, provenance_source: s });
  for (const d of datetimes) await create('item', { title: `t${k}`, d, valid_until: d });
  for (const u of [p1, p1.toUpperCase(), '00000000-0000-0000-0000-000000000000', '11111111-1111-4111-8111-111111111111']) await create('item', { title: `t${k}`, u, source_ref: u });
  for (const list of lists) await create('item', { title: `t${k}`, tags: list, plain: list, ctid: list });
  await create('item', { title: 'big', tags: Array.from({ length: 256 }, (_, i) => String(i).padStart(3, '0') + 'x'.repeat(253)) });
  for (const status of ['active', 'superseded', 'é', 'e\u0301', 'Ω', ' active']) await create('item', { title: `t${k}`, status, confidence: raw('0.25') });
  for (const b of [true, false, raw('1'), 'true', null]) await create('item', { title: `t${k}`, b });
  for (const record of [{}, { title: null }, { title: 'x', id: p1 }, { title: 'x', zz: 1 }, { title: 'x', note: 'y'.repeat(2000) }, { title: 'x', s: { a: 1 } }, { title: 'x', tags: [1] }]) await create('item', record);
  await create('item', { title: 'T', x: raw('1') }, 'replay-x');
  await create('item', { title: 'T', x: raw('1.0'), s: null }, 'replay-x');
  await create('item', { title: 'T', x: raw('2') }, 'replay-x');
  await create('item', { title: 'T' }, '__aipcs_reserved');

  // Relationships: a self reference, a referenced delete, a reference to a deleted record.
  await pair.call('aipcs_record_update', { service_id: sid, entity_name: 'project', record_id: p1, updates: { parent: p1 }, expected_record_version: 1, idempotency_key: 'self' });
  const deleteArgs = (record: string, version: number, key: string) => ({ service_id: sid, entity_name: 'project', record_id: record, expected_record_version: version, idempotency_key: key });
  await pair.call('aipcs_record_delete', deleteArgs(p1, 2, 'del-p1'));
  await pair.call('aipcs_record_delete', deleteArgs(p2, 2, 'del-p2-stale'));
  await pair.call('aipcs_record_delete', deleteArgs(p2, 1, 'del-p2'));
  const items = (await pair.call('aipcs_record_list', { service_id: sid, entity_name: 'item', limit: 100 })).a.result?.['records'] as { id: string }[];
  const referencing = items.find((record) => record.id)?.id;
  await pair.call('aipcs_record_delete', deleteArgs(p1, 2, 'del-p1'));
  await pair.call('aipcs_record_delete', deleteArgs(p1, 2, 'del-p1b'));
  await pair.call('aipcs_record_delete', deleteArgs(p1, 2, 'del-p1b'));
  await pair.call('aipcs_record_history', { service_id: sid, entity_name: 'project', record_id: p1 });
  await create('item', { title: 'ref', u: p1 });
  await create('project', { name: 'P5', parent: p2 });

  // Updates: stale, 1 vs 1.0 under one key, unique index, clearing a required field.
  const target = items[0]!.id;
  const update = (updates: Record<string, unknown>, version: number | RawNumber, key: string) =>
    pair.call('aipcs_record_update', { service_id: sid, entity_name: 'item', record_id: target, updates, expected_record_version: version, idempotency_key: key }, key);
  await update({ x: raw('1') }, 1, 'up-x');
  await update({ x: raw('1.0') }, 1, 'up-x');
  await update({ x: raw('1') }, 1, 'up-x');
  await update({ ci: raw('1') }, 2, 'up-ci');
  await update({ title: null }, 2, 'up-null');
  await update({ s: 'same' }, raw('9223372036854775807'), 'up-max');
  await update({ s: 'same' }, 3, 'up-stale');
  await update({ s: 'same', tags: ['é', 'a'] }, 2, 'up-ok');

  // Branches.
  const branch = async (args: Record<string, unknown>, key: string) => {
    const step = await pair.call('aipcs_branch_create', { service_id: sid, title: 'Title', intent: 'Intent', ...args, idempotency_key: key }, key);
    return step.a.result?.['branch'] as { id: string } | undefined;
  };
  const b1 = (await branch({ slug: 'root' }, 'b1'))!.id;
  const b2 = (await branch({ slug: 'child', parent_branch_id: b1, branch_type: 'topic' }, 'b2'))!.id;
  const b3 = (await branch({ slug: 'g'.repeat(64), parent_branch_id: b2, retrieval_summary: 'é', title: 'T'.repeat(160) }, 'b3'))!.id;
  await branch({ slug: 'root' }, 'b4');
  await branch({ slug: 'root' }, 'b1');
  await branch({ slug: 'other', retrieval_summary: '  ' }, 'b5');
  await branch({ slug: 'ab-' }, 'b6');
  await branch({ slug: 'x-y', parent_branch_id: '66666666-6666-4666-8666-666666666666' }, 'b7');
  const branchUpdate = (id: string, revision: number, updates: Record<string, unknown>, key: string) =>
    pair.call('aipcs_branch_update', { service_id: sid, branch_id: id, expected_branch_revision: revision, updates, idempotency_key: key }, key);
  await branchUpdate(b1, 1, { parent_branch_id: b3 }, 'bu-cycle');
  await branchUpdate(b1, 1, { parent_branch_id: b1 }, 'bu-self');
  await branchUpdate(b1, 1, { title: 'Title' }, 'bu-noop');
  await branchUpdate(b1, 1, { title: 'T2', status: 'archived' }, 'bu-archive');
  await branchUpdate(b1, 1, { title: 'T3' }, 'bu-stale');
  await branchUpdate(b3, 1, { parent_branch_id: null, retrieval_summary: null }, 'bu-root');
  const version = async (id: string) => Number(((await pair.call('aipcs_record_get', { service_id: sid, entity_name: 'item', record_id: id })).a.result?.['record_version'] as number | undefined) ?? 1);
  const assign = async (branchId: string, role: string, operation: string, targets: string[], key: string, stale = false) => {
    const records = [];
    for (const id of targets) records.push({ entity_name: 'item', record_id: id, expected_record_version: (await version(id)) + (stale ? 1 : 0) });
    await pair.call('aipcs_branch_assign_records', { service_id: sid, branch_id: branchId, role, operation, records, idempotency_key: key }, key);
  };
  const [i1, i2, i3, i4, i5] = items.slice(1, 6).map((record) => record.id);
  await assign(b1, 'primary', 'assign', [i1!], 'a-archived');
  await assign(b2, 'primary', 'assign', [i1!, i2!], 'a-primary');
  await assign(b2, 'related', 'assign', [i3!, i2!], 'a-related');
  await assign(b3, 'primary', 'assign', [i2!], 'a-move');
  await assign(b3, 'related', 'assign', [i4!], 'a-stale', true);
  await assign(b3, 'primary', 'assign', [i3!, i3!], 'a-duplicate');
  await assign(b2, 'related', 'unassign', [i3!, i5!], 'a-unassign');
  await assign(b3, 'primary', 'unassign', [i2!], 'a-unassign-primary');
  await assign(b3, 'related', 'assign', [i4!, i5!], 'a-related-2');
  await pair.call('aipcs_record_delete', { service_id: sid, entity_name: 'item', record_id: i4!, expected_record_version: await version(i4!), idempotency_key: 'del-member' });
  await pair.call('aipcs_record_delete', { service_id: sid, entity_name: 'item', record_id: referencing ?? i5!, expected_record_version: 1, idempotency_key: 'del-stale' });

  for (const args of [{}, { parent_branch_id: b1 }, { status: 'archived' }, { branch_type: 'topic' }, { limit: 1 }]) await pair.pageAll('aipcs_branch_list', { service_id: sid, ...args });
  for (const role of ['primary', 'related']) await pair.call('aipcs_record_list', { service_id: sid, entity_name: 'item', branch_id: b3, branch_role: role });
  const searches: Record<string, unknown>[] = [
    { tags: 'a' },
    { tags: 'é', s: 'same' },
    { s: 'x'.repeat(16384) },
    { x: raw('1') },
    { x: raw('-0.0') },
    { x: raw('9007199254740993') },
    { n: raw('9223372036854775807') },
    { n: raw('1.0') },
    { ai: raw('1') },
    { b: true },
    { d: '2030-01-01T00:00:00Z' },
    { status: 'other' },
    { note: 'x' },
    { plain: 'a' },
    { id: target },
    { ctid: 'a', xmin: 'Z' },
    { zz: 1 },
  ];
  for (const filters of searches) await pair.call('aipcs_record_search', { service_id: sid, entity_name: 'item', filters, limit: 3 }, JSON.stringify(filters).slice(0, 60));
  await pair.call('aipcs_record_search', { service_id: sid, entity_name: 'item', filters: { tags: 'a' }, branch_id: b3, branch_role: 'related' });

  // Pages with writes between them.
  let extra = 0;
  const writeBetween = async () => {
    await create('item', { title: `between ${++extra}`, tags: ['a'], n: raw('0') });
  };
  await pair.pageAll('aipcs_record_list', { service_id: sid, entity_name: 'item', limit: 9 }, writeBetween);
  await pair.pageAll('aipcs_record_search', { service_id: sid, entity_name: 'item', filters: { tags: 'a' }, limit: 2 }, writeBetween);
  await pair.pageAll('aipcs_record_history', { service_id: sid, entity_name: 'item', limit: 13 }, writeBetween);

  await pair.call('aipcs_service_summary', { service_id: sid, sample: 3 });
  await pair.call('aipcs_maintenance_scan', { service_id: sid, limit: 100 });
  await pair.call('aipcs_maintenance_scan', { service_id: sid, branch_id: b3 });
  await pair.call('aipcs_maintenance_scan', { service_id: sid, entity_name: 'project', scan_types: ['blob_candidate', 'stale'] });
  pair.advanceDays(120);
  await pair.call('aipcs_maintenance_scan', { service_id: sid, limit: 100, stale_after_days: 30, low_confidence_below: raw('0.3') });

  // Evolve: old cursors fail, old records read with the appended fields, a create replay no longer matches.
  const listed = await pair.call('aipcs_record_list', { service_id: sid, entity_name: 'item', limit: 2 });
  await pair.call('aipcs_service_evolve', { service_id: sid, expected_service_revision: 3, expected_schema_version: 1, schema: manifestV2(), idempotency_key: 'evolve-1' });
  await pair.call('aipcs_service_evolve', { service_id: sid, expected_service_revision: 3, expected_schema_version: 1, schema: manifestV2(), idempotency_key: 'evolve-1' });
  await pair.each(
    'aipcs_record_list',
    { service_id: sid, entity_name: 'item', limit: 2, cursor: listed.a.result?.['next_cursor'] },
    { service_id: sid, entity_name: 'item', limit: 2, cursor: listed.b.result?.['next_cursor'] },
  );
  await pair.call('aipcs_record_get', { service_id: sid, entity_name: 'item', record_id: target });
  await create('item', { title: 'T', x: raw('1') }, 'replay-x');
  for (const filters of [{ note: 'y'.repeat(2000) }, { plain: 'a' }, { late: 'l' }]) await pair.call('aipcs_record_search', { service_id: sid, entity_name: 'item', filters });
  await pair.restart();
  await pair.call('aipcs_record_update', { service_id: sid, entity_name: 'item', record_id: target, updates: { late: 'l', cmax: false }, expected_record_version: await version(target), idempotency_key: 'late' });
  await pair.call('aipcs_service_summary', { service_id: sid, sample: 2 });
  await pair.call('aipcs_service_list', {});
  await pair.call('aipcs_bootstrap', { limit: 2 });
  const live = (await pair.call('aipcs_record_list', { service_id: sid, entity_name: 'item', limit: 100 })).a.result?.['records'] as { id: string }[];
  return { sid, items: live.map((record) => record.id), branches: [b1, b2, b3] };
}

/** xorshift32: a fixed walk per seed. */
function rng(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 4294967296;
  };
  return { next, pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!, chance: (p: number) => next() < p };
}

async function randomWalk(pair: Pair, world: { sid: string; items: string[]; branches: string[] }): Promise<void> {
  const { next, pick, chance } = rng(SEED);
  const { sid } = world;
  const versions = new Map<string, number>(world.items.map((id) => [id, 0]));
  const branches = new Map<string, number>(world.branches.map((id) => [id, 0]));
  const gone: string[] = [];
  const keys: [string, Record<string, unknown>][] = [];
  let n = 0;
  const id = () => (chance(0.1) && gone.length ? pick(gone) : chance(0.05) ? '33333333-3333-4333-8333-333333333333' : pick([...versions.keys()]));
  const values: Record<string, () => unknown> = {
    s: () => pick(['a', ' a', 'é', 'Ω', 'e\u0301', '😀', '', 'same']),
    n: () => raw(pick(['0', '1', '-1', '9223372036854775807'])),
    x: () => raw(pick(['0.0', '-0.0', '1', '1.0', '2.5', '1e308'])),
    b: () => pick([true, false]),
    d: () => pick(datetimes.slice(0, 3)),
    tags: () => [...new Set([pick(['a', 'b', 'é']), pick(['a', 'Ω', 'z'])])],
    plain: () => (chance(0.5) ? [] : ['a']),
    status: () => pick(['active', 'superseded', 'z']),
    confidence: () => raw(pick(['0', '0.49', '0.5', '1'])),
    provenance_source: () => pick(['p1', 'p2', ' ']),
    scope: () => pick(['', 'x']),
    late: () => pick(['l1', 'l2']),
    ci: () => raw(String(Math.floor(next() * 40))),
  };
  const fields = Object.keys(values);
  const record = () => {
    const out: Record<string, unknown> = {};
    for (const field of fields) if (chance(0.3)) out[field] = chance(0.08) ? null : values[field]!();
    return out;
  };
  const note = (step: Step) => {
    const result = step.a.result;
    if (!step.a.ok || !result) return;
    const rec = result['record'] as { id: string; record_version: number; entity_name: string } | undefined;
    if (rec?.entity_name === 'item') versions.set(rec.id, rec.record_version);
    const br = result['branch'] as { id: string; branch_revision: number } | undefined;
    if (br) branches.set(br.id, br.branch_revision);
    const targets = result['records'] as { id: string; record_version: number }[] | undefined;
    if (targets && 'replayed' in result) for (const target of targets) if (versions.has(target.id)) versions.set(target.id, target.record_version);
  };
  const current = async (record: string) => versions.get(record) || Number(((await pair.call('aipcs_record_get', { service_id: sid, entity_name: 'item', record_id: record })).a.result?.['record_version'] as number | undefined) ?? 1);
  const ops: [number, () => Promise<void>][] = [
    [8, async () => {
      const args = { service_id: sid, entity_name: 'item', record: { title: pick(['T', ' V ']), ...record() }, idempotency_key: `w${++n}` };
      keys.push(['aipcs_record_create', args]);
      note(await pair.call('aipcs_record_create', args, 'create'));
    }],
    [6, async () => {
      const target = id();
      const version = await current(target);
      const args = { service_id: sid, entity_name: 'item', record_id: target, updates: { s: 'u', ...record() }, expected_record_version: chance(0.15) ? version + 1 : version, idempotency_key: `w${++n}` };
      keys.push(['aipcs_record_update', args]);
      note(await pair.call('aipcs_record_update', args, 'update'));
    }],
    [2, async () => {
      const target = id();
      const args = { service_id: sid, entity_name: 'item', record_id: target, expected_record_version: await current(target), idempotency_key: `w${++n}` };
      keys.push(['aipcs_record_delete', args]);
      const step = await pair.call('aipcs_record_delete', args, 'delete');
      if (step.a.ok && versions.delete(target)) gone.push(target);
    }],
    [3, async () => {
      if (keys.length === 0) return;
      const [tool, args] = pick(keys);
      const [otherTool, otherArgs] = pick(keys);
      note(chance(0.3) ? await pair.call(otherTool, { ...otherArgs, idempotency_key: args['idempotency_key'] }, 'cross replay') : await pair.call(tool, args, 'replay'));
    }],
    [3, async () => {
      const filters: Record<string, unknown> = {};
      for (let i = 0; i < 1 + Math.floor(next() * 3); i++) {
        const field = pick(['s', 'n', 'x', 'b', 'd', 'tags', 'plain', 'status', 'confidence', 'provenance_source', 'scope', 'late', 'title']);
        const value = field === 'title' ? pick(['T', ' V ']) : values[field]!();
        filters[field] = Array.isArray(value) ? (value[0] ?? 'a') : value;
      }
      const scope = chance(0.3) ? { branch_id: pick([...branches.keys()]), branch_role: pick(['primary', 'related']) } : {};
      await pair.pageAll('aipcs_record_search', { service_id: sid, entity_name: 'item', filters, limit: 1 + Math.floor(next() * 4), ...scope });
    }],
    [2, async () => {
      await pair.pageAll('aipcs_record_history', { service_id: sid, entity_name: 'item', limit: 1 + Math.floor(next() * 20), ...(chance(0.5) ? { record_id: id() } : {}) });
    }],
    [2, async () => {
      const args = { service_id: sid, slug: `topic-${Math.floor(next() * 6)}`, title: 'T', intent: 'I', idempotency_key: `w${++n}`, ...(chance(0.5) ? { parent_branch_id: pick([...branches.keys()]) } : {}) };
      keys.push(['aipcs_branch_create', args]);
      note(await pair.call('aipcs_branch_create', args, 'branch create'));
    }],
    [2, async () => {
      const branch = pick([...branches.keys()]);
      const revision = branches.get(branch) || 1;
      const updates = chance(0.5) ? { status: pick(['active', 'archived', 'superseded']) } : { parent_branch_id: chance(0.3) ? null : pick([...branches.keys()]) };
      const args = { service_id: sid, branch_id: branch, expected_branch_revision: revision, updates, idempotency_key: `w${++n}` };
      keys.push(['aipcs_branch_update', args]);
      note(await pair.call('aipcs_branch_update', args, 'branch update'));
    }],
    [4, async () => {
      const records = [];
      for (let i = 0; i < 1 + Math.floor(next() * 3); i++) {
        const target = id();
        records.push({ entity_name: 'item', record_id: target, expected_record_version: (await current(target)) + (chance(0.05) ? 1 : 0) });
      }
      const args = { service_id: sid, branch_id: pick([...branches.keys()]), role: pick(['primary', 'related']), operation: chance(0.7) ? 'assign' : 'unassign', records, idempotency_key: `w${++n}` };
      keys.push(['aipcs_branch_assign_records', args]);
      note(await pair.call('aipcs_branch_assign_records', args, 'assign'));
    }],
    [1, async () => {
      await pair.call('aipcs_service_summary', { service_id: sid, sample: Math.floor(next() * 4) });
    }],
    [1, async () => {
      await pair.call('aipcs_maintenance_scan', { service_id: sid, limit: 1 + Math.floor(next() * 100), ...(chance(0.3) ? { branch_id: pick([...branches.keys()]) } : {}) });
    }],
  ];
  const total = ops.reduce((sum, [weight]) => sum + weight, 0);
  for (let step = 0; step < STEPS; step++) {
    let roll = next() * total;
    const op = ops.find(([weight]) => (roll -= weight) < 0) ?? ops[0]!;
    await op[1]();
  }
  await pair.call('aipcs_service_summary', { service_id: sid, sample: 3 });
  await pair.call('aipcs_maintenance_scan', { service_id: sid, limit: 100 });
}

/** A lifecycle operation killed at each checkpoint (decisions D13), then resumed by a restarted server under the same key. */
async function crashes(pair: Pair): Promise<void> {
  for (const [i, checkpoint] of ['materialise:admitted', 'materialise:applied', 'evolve:admitted', 'evolve:applied'].entries()) {
    const seeded = await pair.call('aipcs_service_seed', { domain_name: `crash_${i}`, domain_class: 'c', intent_description: 'i', idempotency_key: `crash-seed-${i}` });
    const sid = String(seeded.a.result?.['service_id']);
    await pair.call('aipcs_service_design', { service_id: sid, schema: manifest(), idempotency_key: `crash-design-${i}` });
    const materialise = { service_id: sid, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: `crash-mat-${i}` };
    const evolve = { service_id: sid, expected_service_revision: 3, expected_schema_version: 1, schema: manifestV2(), idempotency_key: `crash-evolve-${i}` };
    const [tool, args] = checkpoint.startsWith('materialise') ? ['aipcs_service_materialise', materialise] : ['aipcs_service_evolve', evolve];
    if (tool === 'aipcs_service_evolve') {
      await pair.call('aipcs_service_materialise', materialise);
      await pair.call('aipcs_record_create', { service_id: sid, entity_name: 'item', record: { title: 'before' }, idempotency_key: `crash-c-${i}` });
    }
    await pair.restart({ AIPCS_FAULT_INJECTION: checkpoint });
    await pair.call(tool, args, checkpoint);
    await pair.restart();
    await pair.call('aipcs_service_inspect', { service_id: sid }, 'pending');
    await pair.call('aipcs_record_list', { service_id: sid, entity_name: 'item' }, 'pending');
    await pair.call('aipcs_record_create', { service_id: sid, entity_name: 'item', record: { title: 'x' }, idempotency_key: `crash-x-${i}` }, 'pending');
    await pair.call('aipcs_bootstrap', {}, 'pending');
    await pair.call(tool, { ...args, idempotency_key: `crash-other-${i}` }, 'other key');
    await pair.call(tool, args, 'resume');
    await pair.call(tool, args, 'replay');
    await pair.call('aipcs_record_create', { service_id: sid, entity_name: 'item', record: { title: 'after' }, idempotency_key: `crash-y-${i}` }, 'after');
    await pair.call('aipcs_record_list', { service_id: sid, entity_name: 'item' }, 'after');
  }
}

// ---------------------------------------------------------------- the test

describe('SQLite and PostgreSQL answer every MCP call alike', () => {
  expectClustersUnderCi();

  for (const cluster of postgresClusters()) {
    it(`sqlite and postgresql ${cluster.version}: identical envelopes over an edge sequence and a seeded walk (seed ${SEED})`, { timeout: 600_000 }, async () => {
      const folder = mkdtempSync(join(tmpdir(), 'aipcs-differential-'));
      const preload = join(folder, 'deterministic-ids.mjs');
      writeFileSync(preload, PRELOAD);
      const clockFile = join(folder, 'clock-offset');
      writeFileSync(clockFile, '0');
      const database = await createTestDatabase(cluster);
      const common = { NODE_OPTIONS: `--import=${pathToFileURL(preload).href}`, AIPCS_DIFF_CLOCK_FILE: clockFile };
      const launch = async (idSeed: string, extra: Record<string, string> = {}): Promise<[Server, Server]> => {
        const env = { ...common, ...extra, AIPCS_DIFF_ID_SEED: `${SEED}-${idSeed}` };
        return Promise.all([
          startServer(['--profile', 'sqlite', '--principal-id', PRINCIPAL, '--sqlite-data-root', join(folder, 'data')], env),
          startServer(['--profile', 'postgresql', '--principal-id', PRINCIPAL, '--postgres-dsn-env', 'AIPCS_DIFF_DSN'], { ...env, AIPCS_DIFF_DSN: database.url }),
        ]);
      };
      const pair = await Pair.start(launch, clockFile);
      try {
        const world = await scripted(pair);
        expect(world.items.length).toBeGreaterThan(40);
        await randomWalk(pair, world);
        await crashes(pair);
        if (process.env['AIPCS_DIFF_STATS'] === '1') console.log([...pair.outcomes.entries()].sort().map(([key, count]) => `${key}=${count}`).join('\n'));
        expect(pair.diffs).toEqual([]);
        // The sequence reached every data tool and the refusals that tell backends apart most easily.
        for (const outcome of [
          'aipcs_service_evolve:ok',
          'aipcs_record_create:constraint_violation',
          'aipcs_record_create:changed_fingerprint',
          'aipcs_record_update:stale_record_version',
          'aipcs_record_delete:constraint_violation',
          'aipcs_branch_create:already_exists',
          'aipcs_branch_update:constraint_violation',
          'aipcs_branch_assign_records:ok',
          'aipcs_record_search:ok',
          'aipcs_record_list:validation_failed',
          'aipcs_maintenance_scan:ok',
          'aipcs_service_evolve:no answer',
          'aipcs_service_materialise:operation_in_progress',
          'aipcs_record_create:storage_busy',
        ]) {
          expect(pair.outcomes.get(outcome) ?? 0, outcome).toBeGreaterThan(0);
        }
      } finally {
        await pair.close();
        await database.drop();
        rmSync(folder, { recursive: true, force: true });
      }
    });
  }
});
