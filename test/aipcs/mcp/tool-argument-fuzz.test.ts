// Seeded fuzzing of the 21 tools' ARGUMENTS through the MCP SDK client over
// stdio, on SQLite and on PostgreSQL in lockstep. Every call is a mutation of
// a valid call (wrong types, missing and extra keys, bounds just under, at and
// over each limit of the contract, unicode edge cases, huge and fractional
// numbers, other services' and principals' ids, tampered and cross-query
// cursors, replayed idempotency keys with changed payloads). Every answer must
// be the contract's envelope (§3.1–§3.4) with a code the contract lists for
// that tool, never `internal_error`, never a leak of internals (§3.5); both
// backends must answer alike (codes and shapes); afterwards the store must be
// consistent (history versions 1..n, list/search agree with get).
//
// AIPCS_FUZZ_CALLS, AIPCS_FUZZ_SEED and AIPCS_FUZZ_MANIFESTS (composed manifests)
// widen the run for exploration; AIPCS_FUZZ_PROBLEMS, AIPCS_FUZZ_LOG and
// AIPCS_FUZZ_REPORT write what it saw.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { appendFileSync, writeFileSync } from 'node:fs';
import { serverProfiles, startAipcs, type AipcsClient, type Envelope } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';
import { rawLineSession, type RawLineSession } from '../../support/raw-stdio.js';
import { seededRandom } from '../../support/prng.js';

const CALLS = Number(process.env['AIPCS_FUZZ_CALLS'] ?? 200);
const SEED = Number(process.env['AIPCS_FUZZ_SEED'] ?? 20261130);

// ---------------------------------------------------------------- randomness

const rng = seededRandom;

// ---------------------------------------------------------------- the contract (§3.4)

const MESSAGES: Record<string, string[]> = {
  validation_failed: ['Request failed public contract validation.'],
  invalid_identifier: ['service_id must be a non-zero lowercase canonical UUID.'],
  retired_field: ['The request contains a field retired from the public v1 contract.'],
  legacy_import_required: ['Manifest version 1 is private legacy input; use the explicit legacy importer.'],
  manifest_version_unsupported: ['Public design intake supports manifest_version 2 only.', 'Public lifecycle intake supports manifest_version 2 only.'],
  not_found: ['The requested service was not found.', 'The requested record or branch was not found.'],
  conflict: ['The request conflicts with existing application state.'],
  invalid_state: ['The service is not in a state that permits this operation.'],
  unsupported_operation: ['The requested MCP tool is unavailable.'],
  unsupported_transition: ['The service lifecycle transition is not supported.'],
  stale_revision: ['The service lifecycle precondition is stale.'],
  changed_fingerprint: ['The idempotency key cannot be reused for a different request.'],
  operation_in_progress: ['A lifecycle operation is already in progress.'],
  recovery_required: ['The service requires recovery before lifecycle work can continue.'],
  storage_busy: ['Storage is temporarily busy.'],
  operation_uncertain: ['The lifecycle operation outcome is uncertain.', 'The operation outcome is uncertain.'],
  storage_unavailable: ['Storage is unavailable.'],
  stale_record_version: ['The record version precondition is stale.'],
  stale_branch_revision: ['The branch revision precondition is stale.'],
  already_exists: ['The requested record or branch already exists.'],
  constraint_violation: ['The requested data relationship is not permitted.'],
  storage_migration_required: ['Service storage requires migration.'],
};
const RETRYABLE = new Set(['storage_busy', 'operation_uncertain', 'operation_in_progress']);
const ISSUE_TEXT: Record<string, string> = {
  field_required: 'A required field is missing.',
  unknown_field: 'The request contains an unsupported field.',
  invalid_length: 'The field has an invalid number of items or characters.',
  invalid_value: 'The field value is invalid.',
};

const BUSY = ['storage_busy', 'storage_unavailable'];
const DATA_READ = ['validation_failed', 'not_found', 'storage_migration_required', ...BUSY];
const DATA_WRITE = [...DATA_READ, 'changed_fingerprint', 'operation_uncertain'];
const LIFECYCLE = ['invalid_identifier', 'retired_field', 'validation_failed', 'changed_fingerprint', 'recovery_required', 'stale_revision', 'unsupported_transition', 'operation_in_progress', 'operation_uncertain', ...BUSY];
/** The codes §3.4 lists per tool (design also waits on operator intents, decisions-aipcs-contract §12.3). */
const ALLOWED: Record<string, string[]> = {
  aipcs_server_info: ['validation_failed'],
  aipcs_service_seed: ['validation_failed', 'conflict', 'operation_uncertain', ...BUSY],
  aipcs_service_list: ['validation_failed', ...BUSY],
  aipcs_service_inspect: ['invalid_identifier', 'validation_failed', 'not_found', ...BUSY],
  aipcs_service_design: ['invalid_identifier', 'retired_field', 'legacy_import_required', 'manifest_version_unsupported', 'validation_failed', 'conflict', 'not_found', 'invalid_state', 'recovery_required', 'operation_uncertain', ...BUSY],
  aipcs_service_materialise: LIFECYCLE,
  aipcs_service_evolve: [...LIFECYCLE, 'legacy_import_required', 'manifest_version_unsupported'],
  aipcs_record_create: [...DATA_WRITE, 'constraint_violation'],
  aipcs_record_get: DATA_READ,
  aipcs_record_list: DATA_READ,
  aipcs_record_search: DATA_READ,
  aipcs_record_update: [...DATA_WRITE, 'stale_record_version', 'constraint_violation'],
  aipcs_record_delete: [...DATA_WRITE, 'stale_record_version', 'constraint_violation'],
  aipcs_record_history: DATA_READ,
  aipcs_bootstrap: ['validation_failed', ...BUSY],
  aipcs_service_summary: DATA_READ,
  aipcs_branch_create: [...DATA_WRITE, 'already_exists'],
  aipcs_branch_list: DATA_READ,
  aipcs_branch_update: [...DATA_WRITE, 'stale_branch_revision', 'constraint_violation'],
  aipcs_branch_assign_records: [...DATA_WRITE, 'stale_record_version', 'constraint_violation'],
  aipcs_maintenance_scan: DATA_READ,
};
const READ_TOOLS = new Set([
  'aipcs_server_info',
  'aipcs_service_list',
  'aipcs_service_inspect',
  'aipcs_record_get',
  'aipcs_record_list',
  'aipcs_record_search',
  'aipcs_record_history',
  'aipcs_bootstrap',
  'aipcs_service_summary',
  'aipcs_branch_list',
  'aipcs_maintenance_scan',
]);

/** Internals that must never reach a client (§3.5). */
const LEAKS: RegExp[] = [
  /\/(?:tmp|home|root|work|usr|var|proc)\//,
  /SQLITE_[A-Z]/,
  /\bE(?:CONN|ADDR|ACCES|NOENT|PIPE)/,
  /duplicate key|violates|syntax error|relation "|column "|no such (?:table|column)/i,
  /\bat [\w$.<>]+ \(|node:internal|\.js:\d+/,
  /\b(?:SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE)\b/,
  /postgres(?:ql)?:\/\//i,
  /fuzz-principal/,
  /TypeError|RangeError|SyntaxError|ReferenceError/,
];

// ---------------------------------------------------------------- the manifest

const attribute = (name: string, type: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ name, type, ...extra });

function manifest(version: number, exactBound = true): Record<string, unknown> {
  const extra = Array.from({ length: version - 1 }, (_, i) => attribute(`extra_${i + 2}`, 'string'));
  return {
    manifest_version: 2,
    schema_version: version,
    entities: [
      { name: 'project', description: 'Projects.', attributes: [...serverManaged(), attribute('name', 'string', { required: true }), attribute('code', 'string')] },
      {
        name: 'note',
        attributes: [
          ...serverManaged(),
          attribute('title', 'string', { required: true }),
          attribute('detail', 'string', { retrieval_mode: 'annotation', description: 'Free prose.' }),
          attribute('status', 'string', { allowed_values: ['draft', 'complete', 'superseded'] }),
          attribute('confidence', 'number'),
          attribute('priority', 'integer', { allowed_values: exactBound ? [1, 2, 3, 9223372036854775807n] : [1, 2, 3] }),
          attribute('pinned', 'boolean'),
          attribute('valid_until', 'datetime'),
          attribute('tags', 'string_list', { retrieval_mode: 'membership' }),
          attribute('labels', 'string_list'),
          attribute('project_id', 'uuid'),
          attribute('provenance_source', 'string'),
          attribute('superseded_by', 'uuid'),
          ...extra,
        ],
      },
    ],
    relationships: [{ name: 'note_project_fk', from: { entity: 'note', field: 'project_id' }, to: { entity: 'project', field: 'id' }, on_delete: 'restrict' }],
    indices: [{ name: 'project_code_unique', entity: 'project', fields: ['code'], unique: true }],
    query_patterns: ['notes by tag'],
    discovery_facets: [
      { entity: 'note', field: 'status' },
      { entity: 'note', field: 'tags' },
      { entity: 'note', field: 'labels' },
    ],
    retrieval_guidance: 'Search notes by status or tag.',
    migration_history: Array.from({ length: version - 1 }, (_, i) => ({ from_schema_version: i + 1, to_schema_version: i + 2, operations: [`add note.extra_${i + 2}`] })),
  };
}

// ---------------------------------------------------------------- symbolic values

/** A reference resolved per backend: an id known by label, or a raw JSON literal (raw session only). */
type Ref = { $ref: string } | { $raw: string };
const ref = (label: string): Ref => ({ $ref: label });
const raw = (literal: string): Ref => ({ $raw: literal });
const isRef = (value: unknown): value is Ref => typeof value === 'object' && value !== null && !Array.isArray(value) && ('$ref' in value || '$raw' in value) && Object.keys(value).length === 1;

function hasRaw(value: unknown): boolean {
  if (typeof value === 'bigint') return true;
  if (isRef(value)) return '$raw' in value;
  if (Array.isArray(value)) return value.some(hasRaw);
  if (typeof value === 'object' && value !== null) return Object.values(value).some(hasRaw);
  return false;
}

interface Backend {
  name: string;
  client: AipcsClient;
  other: AipcsClient;
  raw: RawLineSession;
  ids: Map<string, string>;
  drop(): Promise<void>;
}

const RAW_MARK = '\u0001raw\u0001';
function resolve(value: unknown, backend: Backend): unknown {
  if (isRef(value)) {
    if ('$raw' in value) return `${RAW_MARK}${value.$raw}${RAW_MARK}`;
    const id = backend.ids.get(value.$ref);
    if (id === undefined) throw new Error(`unknown label ${value.$ref}`);
    return id;
  }
  if (typeof value === 'bigint') return `${RAW_MARK}${value}${RAW_MARK}`;
  if (Array.isArray(value)) return value.map((item) => resolve(item, backend));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) Object.defineProperty(out, key, { value: resolve(member, backend), enumerable: true, configurable: true, writable: true });
    return out;
  }
  return value;
}
const rawText = (resolved: unknown): string => JSON.stringify(resolved).replace(/"\\u0001raw\\u0001(.*?)\\u0001raw\\u0001"/g, '$1');

/** Python's str.strip() (what the reference trims arguments with): Unicode whitespace, not U+FEFF or U+200B. */
const pyStrip = (text: string): string => text.replace(/^[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g, '');

// ---------------------------------------------------------------- checks

interface Answer {
  envelope: Envelope;
  text: string;
}

function checkEnvelope(tool: string, answer: Answer, problems: string[], context: string): void {
  const { envelope, text } = answer;
  const fail = (what: string): void => {
    problems.push(`${context}: ${what}`);
  };
  if (JSON.stringify(Object.keys(envelope)) !== '["ok","result","error"]') fail(`envelope keys ${JSON.stringify(Object.keys(envelope))}`);
  if (!/^[\x20-\x7e]*$/.test(text)) fail('text is not ASCII-only compact JSON');
  for (const leak of LEAKS) if (leak.test(text) && !(tool === 'aipcs_server_info' && envelope.ok)) fail(`leak ${leak}: ${text.slice(0, 300)}`);
  if (envelope.ok) {
    if (typeof envelope.result !== 'object' || envelope.result === null || Array.isArray(envelope.result) || envelope.error !== null) fail('bad success envelope');
    return;
  }
  const error = envelope.error;
  if (envelope.result !== null || error === null) {
    fail('bad failure envelope');
    return;
  }
  if (JSON.stringify(Object.keys(error)) !== '["code","message","issues","retryable"]') fail(`error keys ${JSON.stringify(Object.keys(error))}`);
  if (error.code === 'internal_error') fail(`internal_error: ${text.slice(0, 400)}`);
  else if (!(MESSAGES[error.code] ?? []).includes(error.message)) fail(`code ${error.code} with message ${error.message}`);
  if (!(ALLOWED[tool] ?? ['unsupported_operation']).includes(error.code)) fail(`code ${error.code} not listed for ${tool}`);
  if (error.retryable !== RETRYABLE.has(error.code)) fail(`retryable ${String(error.retryable)} for ${error.code}`);
  if (!Array.isArray(error.issues) || error.issues.length > 32) fail('issues not an array of at most 32');
  if (error.issues.length > 0 && error.code !== 'validation_failed') fail(`issues on ${error.code}`);
  for (const issue of error.issues) {
    if (JSON.stringify(Object.keys(issue)) !== '["code","path","message","remediation"]') fail(`issue keys ${JSON.stringify(Object.keys(issue))}`);
    if (ISSUE_TEXT[issue.code] !== (issue as unknown as { message: string }).message) fail(`issue ${issue.code} text`);
    if (typeof issue.path !== 'string' || issue.path.length < 1 || issue.path.length > 240) fail(`issue path ${JSON.stringify(issue.path)}`);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{6})?Z$/;

/** A backend-independent view of an answer: ids by label, timestamps, cursors and list order abstracted. */
function normalise(value: unknown, labels: Map<string, string>, key = ''): unknown {
  if (typeof value === 'string') {
    if (UUID.test(value)) return labels.get(value) ?? '<uuid>';
    if (TIMESTAMP.test(value)) return '<ts>';
    if (key === 'next_cursor') return '<cursor>';
    if (key === 'namespace' || key === 'backend') return '<storage>';
    return value;
  }
  if (Array.isArray(value)) {
    const items = value.map((item) => normalise(item, labels));
    // Pages are ordered by random ids: compare them as multisets.
    return ['records', 'branches', 'candidates', 'services', 'samples', 'values'].includes(key) ? items.map((item) => JSON.stringify(item)).sort() : items;
  }
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalise(v, labels, k)]));
  }
  return value;
}

/** Only the shape: key sets, types and array lengths (for pages whose subset depends on random ids). */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.length;
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v)]));
  return value === null ? null : typeof value;
}

// ---------------------------------------------------------------- the run

interface Call {
  tool: string;
  args: Record<string, unknown>;
  mutation: string;
}

class Fuzzer {
  readonly problems: string[] = [];
  readonly codes = new Map<string, number>();
  private readonly random: () => number;
  private counter = 0;
  private rawId = 0;
  /** Records whose stored title or name may carry surrounding whitespace (output is trimmed, §6.2). */
  readonly padded = new Set<string>();
  /** Labels known on every backend, with what the fuzzer believes about them. */
  readonly records: { label: string; entity: string; version: number; deleted: boolean }[] = [];
  readonly branches: { label: string; revision: number }[] = [];
  readonly cursors: { label: string; tool: string; args: Record<string, unknown> }[] = [];
  readonly keys: { key: string; tool: string; args: Record<string, unknown> }[] = [];
  schemaVersion = 1;
  serviceRevision = 3;

  constructor(
    readonly backends: Backend[],
    seed: number,
  ) {
    this.random = rng(seed);
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)] as T;
  }
  chance(p: number): boolean {
    return this.random() < p;
  }
  int(n: number): number {
    return Math.floor(this.random() * n);
  }
  key(): string {
    return `k${++this.counter}-${this.int(1e6)}`;
  }

  /** Sends one call to every backend; returns the answers (null where the call could not even be sent). */
  async send(call: Call): Promise<(Answer | null)[]> {
    const answers: (Answer | null)[] = [];
    for (const backend of this.backends) answers.push(await this.sendOne(backend, call));
    this.differential(call, answers);
    return answers;
  }

  async sendOne(backend: Backend, call: Call): Promise<Answer | null> {
    const context = `${backend.name} #${this.counter} ${call.tool} [${call.mutation}]`;
    let answer: Answer | null = null;
    try {
      const resolved = resolve(call.args, backend);
      if (hasRaw(call.args) || typeof call.args !== 'object') {
        const id = ++this.rawId;
        const line = await backend.raw.send(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":${JSON.stringify(call.tool)},"arguments":${rawText(resolved)}}}`, id);
        const result = (JSON.parse(line) as { result: { content: { type: string; text: string }[]; structuredContent: unknown; isError: boolean } }).result;
        const text = result.content[0]?.text ?? '';
        if (result.content.length !== 1 || result.content[0]?.type !== 'text') throw new Error('not exactly one text item');
        const envelope = JSON.parse(text) as Envelope;
        if (JSON.stringify(envelope) !== JSON.stringify(result.structuredContent)) {
          if (process.env['AIPCS_FUZZ_PROBLEMS']) appendFileSync(`${process.env['AIPCS_FUZZ_PROBLEMS']}.lines`, `${line}\n`);
          throw new Error('text and structuredContent differ');
        }
        if (result.isError !== !envelope.ok) throw new Error('isError does not mirror ok');
        answer = { envelope, text };
      } else {
        const result = await backend.client.client.callTool({ name: call.tool, arguments: resolved as Record<string, unknown> }, undefined, { timeout: 60_000 });
        const content = result.content as { type: string; text: string }[];
        if (content.length !== 1 || content[0]?.type !== 'text') throw new Error('not exactly one text item');
        const text = content[0].text;
        const envelope = JSON.parse(text) as Envelope;
        if (JSON.stringify(envelope) !== JSON.stringify(result.structuredContent)) throw new Error('text and structuredContent differ');
        if (result.isError !== !envelope.ok) throw new Error('isError does not mirror ok');
        answer = { envelope, text };
      }
      checkEnvelope(call.tool, answer, this.problems, context);
      const code = answer.envelope.ok ? 'ok' : (answer.envelope.error?.code ?? '?');
      this.codes.set(`${call.tool} ${code}`, (this.codes.get(`${call.tool} ${code}`) ?? 0) + 1);
    } catch (error) {
      this.problems.push(`${context}: ${(error as Error).message.slice(0, 300)}`);
    }
    return answer;
  }

  private differential(call: Call, answers: (Answer | null)[]): void {
    if (answers.length < 2 || answers.some((a) => a === null)) return;
    const views = answers.map((answer, i) => {
      const envelope = (answer as Answer).envelope;
      const backend = this.backends[i] as Backend;
      if (!envelope.ok) return JSON.stringify(envelope.error);
      const labels = new Map([...backend.ids].map(([label, id]) => [id, label]));
      // Which records a truncated page holds depends on the random ids: compare shapes there, whole pages as multisets.
      const result = envelope.result as Record<string, unknown>;
      const truncated =
        (['aipcs_record_list', 'aipcs_record_search', 'aipcs_branch_list'].includes(call.tool) && result['next_cursor'] !== null) ||
        (call.tool === 'aipcs_maintenance_scan' && (result['candidates'] as unknown[]).length >= (typeof call.args['limit'] === 'number' ? call.args['limit'] : 50));
      if (call.tool === 'aipcs_service_summary') return JSON.stringify(normalise({ ...result, samples: shape(result['samples']) }, labels));
      return JSON.stringify(truncated ? shape(result) : normalise(result, labels));
    });
    if (new Set(views).size > 1) this.problems.push(`differential #${this.counter} ${call.tool} [${call.mutation}] ${JSON.stringify(call.args).slice(0, 300)}\n   ${views.map((v) => v.slice(0, 400)).join('\n   ')}`);
  }

  /** Records the ids a successful answer created, under one label for all backends. */
  learn(label: string, answers: (Answer | null)[], pick: (result: Record<string, unknown>) => unknown): boolean {
    const ids = answers.map((a) => (a?.envelope.ok ? pick(a.envelope.result as Record<string, unknown>) : undefined));
    if (ids.some((id) => typeof id !== 'string')) return false;
    this.backends.forEach((backend, i) => backend.ids.set(label, ids[i] as string));
    return true;
  }

  // ------------------------------------------------------------ valid calls

  validRecord(): Record<string, unknown> {
    const record: Record<string, unknown> = { title: `note ${this.int(1000)}` };
    if (this.chance(0.5)) record['status'] = this.pick(['draft', 'complete', 'superseded']);
    if (this.chance(0.5)) record['confidence'] = this.pick([0, 0.25, 0.75, 1, 0.5]);
    if (this.chance(0.5)) record['priority'] = this.pick([1, 2, 3]);
    if (this.chance(0.3)) record['pinned'] = this.chance(0.5);
    if (this.chance(0.3)) record['valid_until'] = this.pick(['2020-01-01T00:00:00Z', '2099-01-01T00:00:00+00:00']);
    if (this.chance(0.5)) record['tags'] = this.pick([[], ['a'], ['a', 'b'], ['release']]);
    if (this.chance(0.3)) record['labels'] = this.pick([['x'], ['x', 'y']]);
    if (this.chance(0.3)) record['project_id'] = ref('project0');
    if (this.chance(0.3)) record['provenance_source'] = this.pick(['doc-1', 'doc-2']);
    if (this.chance(0.2)) record['detail'] = 'd'.repeat(this.pick([1, 1025]));
    return record;
  }

  liveRecord(): { label: string; entity: string; version: number; deleted: boolean } {
    const live = this.records.filter((r) => !r.deleted);
    return this.pick(live.length > 0 ? live : this.records);
  }

  validCall(tool: string): Call {
    const svc = ref('svc');
    const record = this.liveRecord();
    const branch = this.pick(this.branches);
    const page = (): Record<string, unknown> => (this.chance(0.5) ? { limit: this.pick([1, 2, 50, 100]) } : {});
    const make = (args: Record<string, unknown>): Call => ({ tool, args, mutation: 'valid' });
    switch (tool) {
      case 'aipcs_server_info':
        return make({});
      case 'aipcs_service_seed':
        return make({ domain_name: `fuzz_${this.int(5)}`, domain_class: 'knowledge', intent_description: 'Fuzzed.', idempotency_key: this.key() });
      case 'aipcs_service_list':
      case 'aipcs_bootstrap':
        return make(this.chance(0.5) ? { limit: this.pick([1, 100]) } : {});
      case 'aipcs_service_inspect':
        return make({ service_id: ref(this.pick(['svc', 'seeded', 'designed'])) });
      case 'aipcs_service_design':
        return make({ service_id: ref(this.pick(['seeded', 'designed', 'svc'])), schema: manifest(1), idempotency_key: this.key() });
      case 'aipcs_service_materialise':
        return make({ service_id: ref(this.pick(['designed', 'seeded', 'svc'])), expected_service_revision: 2, expected_schema_version: 1, idempotency_key: this.key() });
      case 'aipcs_service_evolve':
        return make({ service_id: svc, expected_service_revision: this.serviceRevision, expected_schema_version: this.schemaVersion, schema: manifest(this.schemaVersion + 1), idempotency_key: this.key() });
      case 'aipcs_record_create':
        return this.chance(0.2)
          ? make({ service_id: svc, entity_name: 'project', record: { name: `p${this.int(100)}`, code: `c${this.int(1e6)}` }, idempotency_key: this.key() })
          : make({ service_id: svc, entity_name: 'note', record: this.validRecord(), idempotency_key: this.key() });
      case 'aipcs_record_get':
        return make({ service_id: svc, entity_name: record.entity, record_id: ref(record.label) });
      case 'aipcs_record_list':
        return make({ service_id: svc, entity_name: 'note', ...page(), ...(this.chance(0.3) ? { branch_id: ref(branch.label), branch_role: this.pick(['primary', 'related']) } : {}) });
      case 'aipcs_record_search':
        return make({
          service_id: svc,
          entity_name: 'note',
          filters: this.pick<Record<string, unknown>>([{ status: 'draft' }, { tags: 'a' }, { priority: 1 }, { pinned: true }, { confidence: 1 }, { title: 'note 1', status: 'complete' }]),
          ...page(),
        });
      case 'aipcs_record_update':
        return make({
          service_id: svc,
          entity_name: record.entity,
          record_id: ref(record.label),
          updates: record.entity === 'note' ? { title: `t${this.int(100)}` } : { name: `n${this.int(100)}` },
          expected_record_version: record.version,
          idempotency_key: this.key(),
        });
      case 'aipcs_record_delete':
        return make({ service_id: svc, entity_name: record.entity, record_id: ref(record.label), expected_record_version: record.version, idempotency_key: this.key() });
      case 'aipcs_record_history':
        return make({ service_id: svc, entity_name: 'note', ...(this.chance(0.6) ? { record_id: ref(record.label) } : {}), ...page() });
      case 'aipcs_service_summary':
        return make({ service_id: svc, ...(this.chance(0.5) ? { sample: this.pick([0, 1, 3]) } : {}) });
      case 'aipcs_branch_create':
        return make({
          service_id: svc,
          slug: `b-${this.int(1e6)}`,
          title: 'A branch',
          intent: 'Fuzzing.',
          ...(this.chance(0.3) ? { branch_type: 'topic' } : {}),
          ...(this.chance(0.3) ? { parent_branch_id: ref(branch.label) } : {}),
          ...(this.chance(0.3) ? { retrieval_summary: 'Summary.' } : {}),
          idempotency_key: this.key(),
        });
      case 'aipcs_branch_list':
        return make({ service_id: svc, ...page(), ...(this.chance(0.3) ? { status: 'active' } : {}) });
      case 'aipcs_branch_update':
        return make({ service_id: svc, branch_id: ref(branch.label), expected_branch_revision: branch.revision, updates: { title: `T${this.int(10)}` }, idempotency_key: this.key() });
      case 'aipcs_branch_assign_records': {
        const targets = this.records.filter((r) => !r.deleted && r.entity === 'note').slice(0, 1 + this.int(3));
        return make({
          service_id: svc,
          branch_id: ref(branch.label),
          role: this.pick(['primary', 'related']),
          operation: this.pick(['assign', 'unassign']),
          records: targets.map((r) => ({ entity_name: r.entity, record_id: ref(r.label), expected_record_version: r.version })),
          idempotency_key: this.key(),
        });
      }
      case 'aipcs_maintenance_scan':
        return make({ service_id: svc, ...(this.chance(0.3) ? { scan_types: ['stale', 'low_confidence'] } : {}), ...(this.chance(0.3) ? { entity_name: 'note' } : {}) });
    }
    throw new Error(tool);
  }

  // ------------------------------------------------------------ mutations

  evilValue(): unknown {
    const long = (n: number, ch = 'a') => ch.repeat(n);
    return this.pick<() => unknown>([
      () => null,
      () => true,
      () => 0,
      () => -1,
      () => 1.5,
      () => '',
      () => '   ',
      () => [],
      () => {
        return {};
      },
      () => ['a', 'a'],
      () => [1, 2],
      () => [{}],
      () => '\ud800',
      () => 'a\udc00b',
      () => 'a\u0000b',
      () => '\u2028\u2029',
      () => '\ufeff',
      () => '😀'.repeat(this.pick([1, 256, 257])),
      () => long(this.pick([63, 64, 65, 128, 129, 160, 161, 240, 241, 256, 257, 1000, 1001, 1024, 1025, 2000, 2001, 16384, 16385, 70000])),
      () => 'é'.repeat(this.pick([8192, 8193])),
      () => randomUUID().toUpperCase(),
      () => '00000000-0000-0000-0000-000000000000',
      () => `{${randomUUID()}}`,
      () => randomUUID(),
      () => ref(this.pick(['svc', 'seeded', 'designed', 'other_svc', 'other_record', 'other_branch', 'project0'])),
      () => this.deep(this.pick([10, 100, 900])),
      () => 9223372036854775807n,
      () => 9223372036854775808n,
      () => -9223372036854775808n,
      () => -9223372036854775809n,
      () => 123456789012345678901234567890n,
      () => raw(this.pick(['1.0', '-0', '-0.0', '1e400', '-1e400', '1E2', '1e-400', '2.0', '0.0', '1e0', '9007199254740993', '3.0000000000000001'])),
      () => Number.MAX_SAFE_INTEGER + 2,
      () => 2 ** 53,
      () => 0.1,
      () => -0.5,
      () => 1e300,
      () => '2030-01-01T00:00:00+01:00',
      () => '2030-13-01T00:00:00Z',
      () => 'primary',
      () => '__aipcs_x',
      () => ' padded ',
    ])();
  }

  deep(depth: number): unknown {
    let value: unknown = 'x';
    for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { a: value };
    return value;
  }

  /** Paths of every value inside `args` (objects and arrays), with a setter and a remover. */
  paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
    const out: (string | number)[][] = [];
    if (isRef(value) || typeof value !== 'object' || value === null) return out;
    for (const [k, v] of Array.isArray(value) ? value.map((item, i) => [i, item] as const) : Object.entries(value)) {
      out.push([...prefix, k]);
      out.push(...this.paths(v, [...prefix, k]));
    }
    return out;
  }

  mutate(call: Call): Call {
    const args = structuredClone(call.args) as Record<string, unknown>;
    const paths = this.paths(args);
    const at = (path: (string | number)[]): [Record<string | number, unknown>, string | number] => {
      let node = args as Record<string | number, unknown>;
      for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
      return [node, path[path.length - 1] as string | number];
    };
    const kind = this.pick(['replace', 'replace', 'replace', 'remove', 'extra', 'bound', 'bound', 'key-replay', 'cursor', 'stale', 'foreign', 'trim', 'record-extra']);
    const describe = (what: string): Call => ({ tool: call.tool, args, mutation: what });
    switch (kind) {
      case 'replace': {
        if (paths.length === 0) break;
        const path = this.pick(paths);
        const [node, k] = at(path);
        node[k] = this.evilValue();
        return describe(`replace ${path.join('.')}`);
      }
      case 'remove': {
        if (paths.length === 0) break;
        const path = this.pick(paths);
        const [node, k] = at(path);
        if (Array.isArray(node)) node.splice(k as number, 1);
        else delete node[k];
        return describe(`remove ${path.join('.')}`);
      }
      case 'extra': {
        const objects = [[], ...paths].filter((p) => {
          const v = p.length === 0 ? args : at(p)[0][at(p)[1]];
          return typeof v === 'object' && v !== null && !Array.isArray(v) && !isRef(v);
        });
        const path = this.pick(objects);
        const node = (path.length === 0 ? args : at(path)[0][at(path)[1]]) as Record<string, unknown>;
        const name = this.pick(['__proto__', 'constructor', 'toString', 'offset', 'principal_id', 'created_via', 'request', 'endpoint', 'aliases', 'X', ' title ', 'id', 'owner_id', 'record_version', 'a'.repeat(65), 'a\u0000b', '\ud800', 'é', '💥', '', ' ', 'title\u2028']);
        Object.defineProperty(node, name, { value: this.evilValue(), enumerable: true, configurable: true, writable: true });
        return describe(`extra ${[...path, name].join('.')}`);
      }
      case 'bound': {
        const numeric = paths.filter((p) => {
          const v = at(p)[0][at(p)[1]];
          return typeof v === 'number' || typeof v === 'string' || Array.isArray(v);
        });
        if (numeric.length === 0) break;
        const path = this.pick(numeric);
        const [node, k] = at(path);
        const v = node[k];
        if (typeof v === 'number') node[k] = this.pick<unknown>([0, -1, 1, 3, 4, 8, 9, 17, 20, 99, 100, 101, 3650, 3651, 65, 66, 9223372036854775807n, 9223372036854775808n, raw('100.0'), raw('1e2'), 1.0000001, 0.5, 1.01, -0.01]);
        else if (typeof v === 'string') node[k] = (this.pick([' ', '', 'x', 'Ab']) + v).padEnd(this.pick([0, 1, 2, 3, 48, 49, 62, 63, 64, 65, 80, 81, 96, 97, 128, 129, 160, 161, 1000, 1001, 1024, 1025]), this.pick(['a', 'é', '-', '_', '0']));
        else if (Array.isArray(v)) {
          const target = this.pick([0, 1, 8, 9, 16, 17, 32, 33, 100, 101, 256, 257]);
          const copy = v.length > 0 ? v[0] : 'x';
          node[k] = Array.from({ length: target }, (_, i) => (typeof copy === 'string' ? `${copy}${i}` : structuredClone(copy)));
        }
        return describe(`bound ${path.join('.')}`);
      }
      case 'key-replay': {
        if (!('idempotency_key' in args) || this.keys.length === 0) break;
        args['idempotency_key'] = this.pick(this.keys).key;
        return describe('key-replay');
      }
      case 'cursor': {
        if (!(['aipcs_record_list', 'aipcs_record_search', 'aipcs_record_history', 'aipcs_branch_list'] as string[]).includes(call.tool)) break;
        if (this.cursors.length === 0) {
          args['cursor'] = this.pick(['abc', '!!', 'e30', 'a'.repeat(1024), 'a'.repeat(1025)]);
          return describe('cursor junk');
        }
        const cursor = this.pick(this.cursors);
        args['cursor'] = this.pick<unknown>([ref(cursor.label), { $tamper: cursor.label }]);
        return describe(`cursor ${cursor.tool}`);
      }
      case 'stale': {
        for (const name of ['expected_record_version', 'expected_branch_revision', 'expected_service_revision', 'expected_schema_version']) {
          if (name in args) {
            args[name] = this.pick([1, 2, 1000, 9223372036854775807n]);
            return describe(`stale ${name}`);
          }
        }
        break;
      }
      case 'foreign': {
        for (const name of ['service_id', 'record_id', 'branch_id', 'parent_branch_id']) {
          if (name in args) {
            args[name] = ref(this.pick(['other_svc', 'other_record', 'other_branch', 'seeded', 'designed', 'project0', 'svc']));
            return describe(`foreign ${name}`);
          }
        }
        break;
      }
      case 'trim': {
        const strings = paths.filter((p) => typeof at(p)[0][at(p)[1]] === 'string');
        if (strings.length === 0) break;
        const path = this.pick(strings);
        const [node, k] = at(path);
        node[k] = `${this.pick([' ', '\u00a0', '\u2028', '\u3000', '\t'])}${node[k] as string}${this.pick([' ', '\u200b', '\n'])}`;
        return describe(`trim ${path.join('.')}`);
      }
      case 'record-extra': {
        const map = (['record', 'updates', 'filters'] as const).find((name) => typeof args[name] === 'object' && args[name] !== null && !Array.isArray(args[name]));
        if (map === undefined) break;
        const target = args[map] as Record<string, unknown>;
        const field = this.pick(['title', 'status', 'confidence', 'priority', 'pinned', 'valid_until', 'tags', 'labels', 'project_id', 'detail', 'id', 'owner_id', 'nope', 'Title', 'superseded_by', 'extra_2']);
        target[field] = this.evilValue();
        return describe(`record-extra ${map}.${field}`);
      }
    }
    return describe('valid');
  }

  /** Resolves `{$tamper: label}` into a per-backend tampered cursor before sending. */
  tamper(call: Call): Call {
    const cursorArg = call.args['cursor'];
    if (typeof cursorArg !== 'object' || cursorArg === null || !('$tamper' in cursorArg)) return call;
    const label = (cursorArg as { $tamper: string }).$tamper;
    const how = this.int(4);
    for (const backend of this.backends) {
      const cursor = backend.ids.get(label) ?? 'x';
      const tampered = [cursor.slice(0, -1) + (cursor.endsWith('A') ? 'B' : 'A'), cursor.slice(0, 10), `${cursor}A`, cursor.split('').reverse().join('')][how] as string;
      backend.ids.set(`${label}~`, tampered);
    }
    return { ...call, args: { ...call.args, cursor: ref(`${label}~`) }, mutation: `${call.mutation} tampered` };
  }

  /** Updates what the fuzzer believes after a call that succeeded on every backend. */
  async observe(call: Call, answers: (Answer | null)[]): Promise<void> {
    if (answers.some((a) => a === null || !a.envelope.ok)) return;
    const results = answers.map((a) => (a as Answer).envelope.result as Record<string, unknown>);
    const first = results[0] as Record<string, unknown>;
    if (typeof call.args['idempotency_key'] === 'string') this.keys.push({ key: call.args['idempotency_key'], tool: call.tool, args: call.args });
    if (first['replayed'] === true) return;
    const sent = (call.args['record'] ?? call.args['updates']) as Record<string, unknown> | undefined;
    const paddedTitle = typeof sent === 'object' && sent !== null && Object.entries(sent).some(([k, v]) => k.trim() !== k || (typeof v === 'string' && v.trim() !== v));
    if (paddedTitle && (call.tool === 'aipcs_record_create' || call.tool === 'aipcs_record_update')) {
      const id = (first['record'] as Record<string, unknown>)['id'] as string;
      this.padded.add(id);
      for (const result of results) this.padded.add((result['record'] as Record<string, unknown>)['id'] as string);
    }
    switch (call.tool) {
      case 'aipcs_record_create': {
        const label = `r${this.records.length}`;
        if (this.learn(label, answers, (r) => (r['record'] as Record<string, unknown>)['id'])) this.records.push({ label, entity: call.args['entity_name'] as string, version: 1, deleted: false });
        break;
      }
      case 'aipcs_record_update': {
        const id = (first['record'] as Record<string, unknown>)['id'];
        const entry = this.records.find((r) => this.backends[0]?.ids.get(r.label) === id);
        if (entry) entry.version = Number((first['record'] as Record<string, unknown>)['record_version']);
        break;
      }
      case 'aipcs_record_delete': {
        const entry = this.records.find((r) => this.backends[0]?.ids.get(r.label) === first['id']);
        if (entry) entry.deleted = true;
        break;
      }
      case 'aipcs_branch_create': {
        const label = `b${this.branches.length}`;
        if (this.learn(label, answers, (r) => (r['branch'] as Record<string, unknown>)['id'])) this.branches.push({ label, revision: 1 });
        break;
      }
      case 'aipcs_branch_update': {
        const branch = first['branch'] as Record<string, unknown>;
        const entry = this.branches.find((b) => this.backends[0]?.ids.get(b.label) === branch['id']);
        if (entry) entry.revision = Number(branch['branch_revision']);
        break;
      }
      case 'aipcs_branch_assign_records':
        for (const target of first['records'] as Record<string, unknown>[]) {
          const entry = this.records.find((r) => this.backends[0]?.ids.get(r.label) === target['id']);
          if (entry) entry.version = Number(target['record_version']);
        }
        break;
      case 'aipcs_service_evolve':
        if (call.args['service_id'] !== undefined && JSON.stringify(call.args['service_id']) === JSON.stringify(ref('svc'))) {
          this.schemaVersion = Number(first['schema_version']);
          this.serviceRevision = Number(first['service_revision']);
        }
        break;
      case 'aipcs_record_list':
      case 'aipcs_record_search':
      case 'aipcs_record_history':
      case 'aipcs_branch_list':
        if (typeof first['next_cursor'] === 'string' && this.cursors.length < 50) {
          const label = `c${this.cursors.length}`;
          if (this.learn(label, answers, (r) => r['next_cursor'])) this.cursors.push({ label, tool: call.tool, args: call.args });
        }
        break;
    }
  }

  /** Batches of calls sent at once to each backend (§2.3: requests may be processed concurrently); no differential, no ledger check. */
  async runConcurrent(calls: number, width: number): Promise<void> {
    const tools = Object.keys(ALLOWED);
    this.concurrent = true;
    for (let i = 0; i < calls; i += width) {
      const batch = Array.from({ length: width }, () => {
        const tool = this.pick(tools);
        let call = this.validCall(tool);
        if (this.chance(0.5)) call = this.mutate(call);
        return this.tamper(call);
      });
      const perBackend = await Promise.all(this.backends.map((backend) => Promise.all(batch.map((call) => this.sendOne(backend, call)))));
      for (const [j, call] of batch.entries()) await this.observe(call, perBackend.map((answers) => answers[j] ?? null));
    }
    this.concurrent = false;
  }

  concurrent = false;

  async run(calls: number): Promise<void> {
    const tools = Object.keys(ALLOWED);
    for (let i = 0; i < calls; i++) {
      const tool = this.chance(0.02) ? this.pick(['aipcs_nope', 'aipcs_record_create ', 'AIPCS_SERVER_INFO']) : this.pick(tools);
      let call = tool in ALLOWED ? this.validCall(tool) : { tool, args: {}, mutation: 'unknown tool' };
      if (this.chance(0.85)) call = this.mutate(call);
      call = this.tamper(call);
      const answers = await this.send(call);
      if (process.env['AIPCS_FUZZ_LOG']) {
        const codes = answers.map((a) => (a === null ? 'none' : a.envelope.ok ? 'ok' : `${a.envelope.error?.code}${a.envelope.error?.issues.length ? `:${a.envelope.error.issues.map((x) => `${x.code}@${x.path}`).join(',')}` : ''}`));
        appendFileSync(process.env['AIPCS_FUZZ_LOG'], `${codes.join(' | ')}\t${call.tool}\t${call.mutation}\t${JSON.stringify(call.args, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : typeof v === 'string' && v.length > 80 ? `<${v.length}:${v.slice(0, 12)}>` : v)).slice(0, 400)}\n`);
      }
      await this.observe(call, answers);
      this.expectations(call, answers);
    }
  }

  /** Targeted expectations for single mutations whose outcome the contract fixes. */
  expectations(call: Call, answers: (Answer | null)[]): void {
    for (const [i, answer] of answers.entries()) {
      if (answer === null) continue;
      const context = `${this.backends[i]?.name} ${call.tool} [${call.mutation}]`;
      const { envelope } = answer;
      if (envelope.ok) this.ledgerCheck(call, envelope.result as Record<string, unknown>, i, context);
      if (call.mutation === 'valid' && READ_TOOLS.has(call.tool) && !envelope.ok && envelope.error?.code === 'validation_failed' && envelope.error.issues.length > 0) {
        this.problems.push(`${context}: a valid read was refused with issues ${JSON.stringify(envelope.error.issues)}`);
      }
      const extra = /^extra ([a-z_]+)$/.exec(call.mutation);
      if (extra && call.tool in ALLOWED) {
        const name = extra[1] as string;
        const lifecycle = ['aipcs_service_design', 'aipcs_service_materialise', 'aipcs_service_evolve'].includes(call.tool);
        const expected = lifecycle && ['endpoint', 'aliases'].includes(name) ? 'retired_field' : 'validation_failed';
        if (envelope.ok || (envelope.error?.code !== expected && envelope.error?.code !== 'invalid_identifier')) this.problems.push(`${context}: an undeclared top-level key answered ${envelope.ok ? 'ok' : envelope.error?.code}`);
      }
    }
  }

  /** Completed mutations by (namespace, trimmed key), per backend: the first result. */
  private readonly ledger = new Map<string, { tool: string; results: Map<number, Record<string, unknown>> }>();

  /** §5.2 and §6.4: a key bound by a completed mutation answers the stored result (data: replayed) or a refusal, never a fresh success. */
  ledgerCheck(call: Call, result: Record<string, unknown>, backend: number, context: string): void {
    const key = call.args['idempotency_key'];
    const service = call.args['service_id'];
    if (typeof key !== 'string') return;
    const registry = ['aipcs_service_seed', 'aipcs_service_design', 'aipcs_service_materialise', 'aipcs_service_evolve'].includes(call.tool);
    if (!registry && !isRef(service)) return;
    const id = `${registry ? 'registry' : JSON.stringify(service)}\u0000${pyStrip(key)}`;
    const bound = this.ledger.get(id);
    const strip = (r: Record<string, unknown>) => JSON.stringify({ ...r, replayed: undefined, recovery_state: undefined });
    if (bound === undefined || !bound.results.has(backend)) {
      if (result['replayed'] === true) this.problems.push(`${context}: replayed:true for a key never completed before`);
      const entry = bound ?? { tool: call.tool, results: new Map() };
      entry.results.set(backend, result);
      this.ledger.set(id, entry);
    } else {
      const first = bound.results.get(backend) as Record<string, unknown>;
      if (bound.tool !== call.tool) this.problems.push(`${context}: key bound by ${bound.tool} answered ok for ${call.tool}`);
      else if (!registry && result['replayed'] !== true) this.problems.push(`${context}: a bound data key answered a fresh success (replayed false)`);
      else if (strip(first) !== strip(result)) this.problems.push(`${context}: replay differs from the first result\n   ${strip(first).slice(0, 300)}\n   ${strip(result).slice(0, 300)}`);
    }
    if (result['replayed'] === true) return;
    const expected = (name: string) => (typeof call.args[name] === 'number' ? (call.args[name] as number) : undefined);
    const version = expected('expected_record_version');
    if (call.tool === 'aipcs_record_update' && version !== undefined && Number((result['record'] as Record<string, unknown>)['record_version']) !== version + 1) this.problems.push(`${context}: update from ${version} gave ${String((result['record'] as Record<string, unknown>)['record_version'])}`);
    if (call.tool === 'aipcs_record_delete' && version !== undefined && Number(result['record_version']) !== version + 1) this.problems.push(`${context}: delete from ${version} gave ${String(result['record_version'])}`);
    const revision = expected('expected_branch_revision');
    const got = Number((result['branch'] as Record<string, unknown> | undefined)?.['branch_revision']);
    if (call.tool === 'aipcs_branch_update' && revision !== undefined && got !== revision && got !== revision + 1) this.problems.push(`${context}: branch update from ${revision} gave ${got}`);
  }

  // ------------------------------------------------------------ composed manifests

  identifier(max = 63): string {
    const pool = ['select', 'order', 'user', 'group', 'table', 'index', 'from', 'where', 'default', 'check', 'limit', 'desc', 'primary', 'oid', 'xmin', 'ctid', 'value', 'key', 'rowid', 'oid_', 'id_', 'owner', 'a'];
    if (this.chance(0.4)) return this.pick(pool);
    const length = this.pick([1, 2, 30, 47, 48, 62, 63].filter((n) => n <= max));
    const stem = this.pick(['long_shared_prefix_', 'x', 'q9_', 'field_']);
    return `${stem}${Array.from({ length: 63 }, () => this.pick([...'abcdefghijklmnopqrstuvwxyz0123456789_'])).join('')}`.slice(0, length).replace(/_+$/, 'z');
  }

  /** A random manifest of 1..3 entities over every field type, with indexes, references and facets. */
  composeManifest(): { manifest: Record<string, unknown>; fields: Map<string, { name: string; type: string; mode: string | null; required: boolean; allowed: unknown[] | null }[]> } {
    const types = ['string', 'integer', 'number', 'boolean', 'datetime', 'uuid', 'string_list'];
    const entityNames = [...new Set(Array.from({ length: 1 + this.int(3) }, () => this.identifier()))];
    const fields = new Map<string, { name: string; type: string; mode: string | null; required: boolean; allowed: unknown[] | null }[]>();
    const entities = entityNames.map((name) => {
      const own = [...new Set(Array.from({ length: 1 + this.int(8) }, () => this.identifier()))].filter((f) => !['id', 'owner_id', 'created_at', 'updated_at', 'created_via', 'record_version'].includes(f));
      const defs = own.map((field) => {
        const type = this.pick(types);
        const mode = type === 'string' && this.chance(0.3) ? 'annotation' : type === 'string_list' && this.chance(0.6) ? 'membership' : null;
        const allowedPool: Record<string, unknown[]> = {
          string: ['a', 'é', '😀', ' b ', 'x'.repeat(96)],
          string_list: ['a', 'b', 'c'],
          integer: [0, 1, -1, 9223372036854775807n, -9223372036854775808n],
          number: [0, 1.5, raw('1.0'), -2.5, 9007199254740992],
          boolean: [true, false],
        };
        const allowed = allowedPool[type] && this.chance(0.3) ? [...new Set((allowedPool[type] as unknown[]).filter(() => this.chance(0.7)))] : null;
        const def = { name: field, type, mode, required: this.chance(0.2), allowed: allowed && allowed.length > 0 ? allowed : null };
        return def;
      });
      fields.set(name, defs);
      return {
        name,
        ...(this.chance(0.3) ? { description: this.pick(['Ünïcode \u2028 text', 'd'.repeat(1000)]) } : {}),
        attributes: [
          ...serverManaged(),
          ...defs.map((d) => ({ name: d.name, type: d.type, ...(d.required ? { required: true } : {}), ...(d.mode ? { retrieval_mode: d.mode } : {}), ...(d.allowed ? { allowed_values: d.allowed } : {}) })),
        ],
      };
    });
    const relationships: unknown[] = [];
    const indices: unknown[] = [];
    const facets: unknown[] = [];
    for (const [entity, defs] of fields) {
      for (const def of defs) {
        if (def.type === 'uuid' && this.chance(0.5)) {
          relationships.push({ name: this.identifier(48), from: { entity, field: def.name }, to: { entity: this.pick(entityNames), field: 'id' }, on_delete: 'restrict' });
          def.type = 'uuid-ref';
        }
        if (this.chance(0.3)) facets.push({ entity, field: def.name });
      }
      if (defs.length > 0 && this.chance(0.6)) {
        const indexed = [...new Set(Array.from({ length: 1 + this.int(3) }, () => this.pick(defs).name))];
        indices.push({ name: this.identifier(48), entity, fields: indexed, unique: this.chance(0.3) });
      }
    }
    return { manifest: { manifest_version: 2, schema_version: 1, entities, relationships, indices, discovery_facets: facets, query_patterns: ['q'] }, fields };
  }

  valueFor(def: { type: string; allowed: unknown[] | null }): unknown {
    if (def.allowed) {
      // Manifest strings are trimmed when designed (§3.6), so an allowed ' b ' is 'b'.
      const allowed = def.allowed.map((v) => (typeof v === 'string' ? pyStrip(v) : v));
      return def.type === 'string_list' ? allowed.filter(() => this.chance(0.5)) : this.pick(allowed);
    }
    switch (def.type) {
      case 'string':
        return this.pick(['plain', 'ünï\u2028cøde', '😀', 'a\u200bb', 'x'.repeat(16384), 'é'.repeat(8192), "it's \"quoted\" \\ %_", '']);
      case 'integer':
        return this.pick<unknown>([0, -1, 42, 9223372036854775807n, -9223372036854775808n, 9007199254740993n]);
      case 'number':
        return this.pick<unknown>([0, 1.5, raw('-0.0'), raw('1.0'), 1e308, 5e-324, -2.5, 9007199254740992, raw('1E+2')]);
      case 'boolean':
        return this.chance(0.5);
      case 'datetime':
        return this.pick(['2030-01-01T00:00:00Z', '2030-01-01T00:00:00.123456789+00:00', '2030-01-01 00:00:00Z', '20300101T000000Z', '2030-01-01T00:00Z', '1999-12-31T23:59:59-00:00']);
      case 'uuid':
        return randomUUID();
      case 'uuid-ref':
        return null;
      case 'string_list':
        return this.pick([[], ['a'], ['a', 'b', 'ü'], Array.from({ length: 256 }, (_, i) => `m${i}`), ['x'.repeat(256)]]);
    }
    return null;
  }

  async composedService(n: number): Promise<void> {
    const { manifest: composed, fields } = this.composeManifest();
    const label = `composed${n}`;
    const seeded = await this.send({ tool: 'aipcs_service_seed', args: { domain_name: `composed_${n}`, domain_class: 'fuzz', intent_description: 'Composed.', idempotency_key: `cs-${n}` }, mutation: 'composed' });
    if (!this.learn(label, seeded, (r) => r['service_id'])) return;
    const svc = ref(label);
    const designed = await this.send({ tool: 'aipcs_service_design', args: { service_id: svc, schema: composed, idempotency_key: `cd-${n}` }, mutation: 'composed' });
    if (!designed.every((a) => a?.envelope.ok)) return;
    const materialised = await this.send({ tool: 'aipcs_service_materialise', args: { service_id: svc, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: `cm-${n}` }, mutation: 'composed' });
    if (!materialised.every((a) => a?.envelope.ok)) {
      this.problems.push(`composed ${n}: a designed manifest did not materialise: ${JSON.stringify(materialised.map((a) => a?.envelope.error?.code))}`);
      return;
    }
    this.composedCount++;
    for (const [entity, defs] of fields) {
      for (let r = 0; r < 3; r++) {
        const record: Record<string, unknown> = {};
        for (const def of defs) if (def.required || this.chance(0.7)) record[def.name] = this.valueFor(def);
        for (const def of defs) if (def.type === 'uuid-ref' && def.required) record[def.name] = undefined;
        if (defs.some((d) => d.type === 'uuid-ref' && d.required)) continue;
        for (const key of Object.keys(record)) if (record[key] === undefined || record[key] === null) delete record[key];
        const recordLabel = `${label}-${entity}-${r}`;
        const created = await this.send({ tool: 'aipcs_record_create', args: { service_id: svc, entity_name: entity, record, idempotency_key: `cr-${n}-${entity}-${r}` }, mutation: 'composed' });
        if (!this.learn(recordLabel, created, (x) => (x['record'] as Record<string, unknown>)['id'])) {
          const codes = created.map((a) => (a?.envelope.ok ? 'ok' : a?.envelope.error?.code));
          if (!codes.every((c) => c === 'constraint_violation')) this.problems.push(`composed ${n} ${entity}: a valid record was refused ${JSON.stringify(codes)} ${JSON.stringify(record, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : typeof v === 'string' && v.length > 40 ? `<${v.length}>` : v)).slice(0, 300)}`);
          continue;
        }
        await this.send({ tool: 'aipcs_record_get', args: { service_id: svc, entity_name: entity, record_id: ref(recordLabel) }, mutation: 'composed' });
        for (const def of defs) {
          const value = record[def.name];
          if (value === undefined || def.mode === 'annotation' || (def.type === 'string_list' && def.mode !== 'membership')) continue;
          const filter = def.type === 'string_list' ? (value as string[])[0] : value;
          if (filter === undefined) continue;
          const found = await this.send({ tool: 'aipcs_record_search', args: { service_id: svc, entity_name: entity, filters: { [def.name]: filter }, limit: 100 }, mutation: 'composed' });
          for (const [i, answer] of found.entries()) {
            const id = this.backends[i]?.ids.get(recordLabel);
            const ids = answer?.envelope.ok ? ((answer.envelope.result as Record<string, unknown>)['records'] as Record<string, unknown>[]).map((x) => x['id']) : [];
            if (!ids.includes(id)) this.problems.push(`${this.backends[i]?.name} composed ${n}: search ${entity}.${def.name} (${def.type}) = ${JSON.stringify(filter, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : typeof v === 'string' && v.length > 40 ? `<${v.length}>` : v))} misses the record (${answer?.envelope.ok ? 'ok' : answer?.envelope.error?.code})`);
          }
        }
      }
    }
    await this.send({ tool: 'aipcs_service_summary', args: { service_id: svc, sample: 3 }, mutation: 'composed' });
    await this.send({ tool: 'aipcs_maintenance_scan', args: { service_id: svc }, mutation: 'composed' });
    // Evolve: one more attribute and one more index per entity.
    const next = structuredClone(composed) as { entities: { name: string; attributes: unknown[] }[]; indices: unknown[]; schema_version: number; migration_history?: unknown[] };
    next.schema_version = 2;
    next.migration_history = [{ from_schema_version: 1, to_schema_version: 2, operations: ['add'] }];
    for (const entity of next.entities) {
      const added = `zz_added_${this.int(1000)}`;
      entity.attributes.push({ name: added, type: this.pick(['string', 'integer', 'boolean', 'datetime']) });
      next.indices.push({ name: `zz_${entity.name}`.slice(0, 48), entity: entity.name, fields: [added], unique: this.chance(0.5) });
    }
    await this.send({ tool: 'aipcs_service_evolve', args: { service_id: svc, expected_service_revision: 3, expected_schema_version: 1, schema: next, idempotency_key: `ce-${n}` }, mutation: 'composed' });
    for (const entity of fields.keys()) await this.send({ tool: 'aipcs_record_list', args: { service_id: svc, entity_name: entity, limit: 100 }, mutation: 'composed' });
    // A unique index over existing, possibly duplicate, data: admitted or refused at admission, never left pending (D7).
    const third = structuredClone(next) as typeof next;
    third.schema_version = 3;
    third.migration_history = [...(next.migration_history ?? []), { from_schema_version: 2, to_schema_version: 3, operations: ['unique'] }];
    for (const [entity, defs] of fields) {
      const field = defs.find((d) => d.type !== 'string_list');
      if (field) third.indices.push({ name: `uq_${n}_${entity}`.slice(0, 48), entity, fields: [field.name], unique: true });
    }
    const evolved = await this.send({ tool: 'aipcs_service_evolve', args: { service_id: svc, expected_service_revision: 4, expected_schema_version: 2, schema: third, idempotency_key: `ce3-${n}` }, mutation: 'composed unique' });
    for (const [i, answer] of evolved.entries()) {
      const code = answer?.envelope.ok ? 'ok' : answer?.envelope.error?.code;
      if (!['ok', 'unsupported_transition', 'stale_revision'].includes(code ?? '')) this.problems.push(`${this.backends[i]?.name} composed ${n}: unique-index evolve answered ${code} ${JSON.stringify(answer?.envelope.error?.issues ?? [])}`);
    }
    for (const entity of fields.keys()) {
      const listed = await this.send({ tool: 'aipcs_record_list', args: { service_id: svc, entity_name: entity, limit: 100 }, mutation: 'composed after unique' });
      for (const [i, answer] of listed.entries()) if (!answer?.envelope.ok) this.problems.push(`${this.backends[i]?.name} composed ${n}: list after the unique-index evolve answered ${answer?.envelope.error?.code}`);
    }
  }

  composedCount = 0;

  /** The check orders of §5.3–§5.9 and §6.1, one precedence at a time. */
  async orderSweep(): Promise<void> {
    const bad = 'ABC';
    const nil = '00000000-0000-0000-0000-000000000000';
    const withRetired = () => {
      const schema = manifest(1) as { entities: { attributes: Record<string, unknown>[] }[] };
      (schema.entities[0]?.attributes[6] as Record<string, unknown>)['endpoint'] = 'x';
      return schema;
    };
    const version = (v: unknown, broken = false) => ({ ...manifest(1), manifest_version: v, ...(broken ? { entities: [] } : {}) });
    const unknownService = randomUUID();
    const cases: [string, Record<string, unknown>, string, string?][] = [
      ['aipcs_server_info', { x: 1 }, 'validation_failed'],
      ['aipcs_service_inspect', { service_id: bad, extra: 1 }, 'invalid_identifier'],
      ['aipcs_service_inspect', { service_id: nil }, 'invalid_identifier'],
      ['aipcs_service_inspect', { service_id: 5 }, 'invalid_identifier'],
      ['aipcs_service_inspect', {}, 'validation_failed'],
      ['aipcs_service_inspect', { service_id: unknownService }, 'not_found'],
      ['aipcs_service_inspect', { service_id: ref('other_svc') }, 'not_found'],
      ['aipcs_service_design', { service_id: bad, schema: withRetired(), idempotency_key: '' }, 'invalid_identifier'],
      ['aipcs_service_design', { service_id: ref('seeded'), schema: { ...withRetired(), manifest_version: 1 }, idempotency_key: '' }, 'retired_field'],
      ['aipcs_service_design', { service_id: ref('seeded'), schema: version(1, true), idempotency_key: '' }, 'legacy_import_required'],
      ['aipcs_service_design', { service_id: ref('seeded'), schema: version(3, true), idempotency_key: '' }, 'manifest_version_unsupported'],
      ['aipcs_service_design', { service_id: ref('seeded'), schema: version(undefined, true), idempotency_key: 'k' }, 'manifest_version_unsupported'],
      ['aipcs_service_design', { service_id: ref('seeded'), schema: version('2'), idempotency_key: 'k' }, 'manifest_version_unsupported'],
      ['aipcs_service_design', { service_id: ref('seeded'), schema: version(2, true), idempotency_key: 'k' }, 'validation_failed', 'schema.entities'],
      ['aipcs_service_design', { service_id: unknownService, schema: manifest(1), idempotency_key: this.key() }, 'not_found'],
      ['aipcs_service_design', { service_id: ref('other_svc'), schema: manifest(1), idempotency_key: this.key() }, 'not_found'],
      ['aipcs_service_design', { service_id: ref('svc'), schema: manifest(1), idempotency_key: this.key() }, 'invalid_state'],
      ['aipcs_service_design', { service_id: ref('svc'), schema: manifest(1), idempotency_key: 'seed-notes' }, 'conflict'],
      ['aipcs_service_materialise', { service_id: bad, expected_service_revision: 0, expected_schema_version: 1, idempotency_key: '' }, 'invalid_identifier'],
      ['aipcs_service_materialise', { service_id: ref('svc'), expected_service_revision: 0, expected_schema_version: 1, idempotency_key: 'k', tools: [] }, 'retired_field'],
      ['aipcs_service_materialise', { service_id: ref('svc'), expected_service_revision: 2, expected_schema_version: 2, idempotency_key: 'k' }, 'validation_failed', 'expected_schema_version'],
      ['aipcs_service_materialise', { service_id: unknownService, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: this.key() }, 'stale_revision'],
      ['aipcs_service_materialise', { service_id: ref('other_svc'), expected_service_revision: 3, expected_schema_version: 1, idempotency_key: this.key() }, 'stale_revision'],
      ['aipcs_service_materialise', { service_id: ref('svc'), expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'seed-notes' }, 'changed_fingerprint'],
      ['aipcs_service_evolve', { service_id: ref('svc'), expected_service_revision: 3, expected_schema_version: 1, schema: version(1, true), idempotency_key: '' }, 'legacy_import_required'],
      ['aipcs_service_evolve', { service_id: ref('svc'), expected_service_revision: 3, expected_schema_version: 1, schema: manifest(1), idempotency_key: 'k' }, 'validation_failed', 'request'],
      ['aipcs_service_evolve', { service_id: ref('svc'), expected_service_revision: 3, expected_schema_version: 65, schema: manifest(2), idempotency_key: 'k' }, 'validation_failed', 'expected_schema_version'],
      ['aipcs_service_evolve', { service_id: unknownService, expected_service_revision: 3, expected_schema_version: 1, schema: manifest(2), idempotency_key: this.key() }, 'stale_revision'],
      ['aipcs_service_evolve', { service_id: ref('designed'), expected_service_revision: 2, expected_schema_version: 1, schema: manifest(2), idempotency_key: this.key() }, 'unsupported_transition'],
      ['aipcs_record_get', { service_id: bad, entity_name: 'note', record_id: randomUUID() }, 'validation_failed', 'service_id'],
      ['aipcs_record_get', { service_id: unknownService, entity_name: 'nope', record_id: randomUUID() }, 'not_found'],
      ['aipcs_record_get', { service_id: ref('other_svc'), entity_name: 'note', record_id: ref('other_record') }, 'not_found'],
      ['aipcs_record_get', { service_id: ref('seeded'), entity_name: 'note', record_id: randomUUID() }, 'storage_unavailable'],
      ['aipcs_record_get', { service_id: ref('svc'), entity_name: 'nope', record_id: randomUUID() }, 'validation_failed'],
      ['aipcs_record_get', { service_id: ref('svc'), entity_name: 'project', record_id: ref('r1') }, 'not_found'],
      ['aipcs_record_list', { service_id: ref('svc'), entity_name: 'note', branch_id: ref('b0') }, 'validation_failed', 'request'],
      ['aipcs_record_list', { service_id: ref('svc'), entity_name: 'note', branch_role: 'primary', branch_id: null }, 'validation_failed', 'request'],
      ['aipcs_record_search', { service_id: ref('svc'), entity_name: 'note', filters: { detail: 'd' } }, 'validation_failed'],
      ['aipcs_record_search', { service_id: ref('svc'), entity_name: 'note', filters: { labels: 'x' } }, 'validation_failed'],
      ['aipcs_record_search', { service_id: ref('svc'), entity_name: 'note', filters: { id: randomUUID() } }, 'validation_failed'],
      ['aipcs_record_search', { service_id: ref('svc'), entity_name: 'note', filters: { priority: '1' } }, 'validation_failed'],
      ['aipcs_record_search', { service_id: ref('svc'), entity_name: 'note', filters: { priority: 1.5 } }, 'validation_failed'],
      ['aipcs_record_search', { service_id: ref('svc'), entity_name: 'note', filters: { priority: true } }, 'validation_failed'],
      ['aipcs_record_search', { service_id: ref('svc'), entity_name: 'note', filters: { status: null } }, 'validation_failed', 'filters.status'],
      ['aipcs_record_create', { service_id: ref('svc'), entity_name: 'note', record: { title: 't', project_id: ref('other_record') }, idempotency_key: this.key() }, 'constraint_violation'],
      ['aipcs_record_create', { service_id: ref('svc'), entity_name: 'note', record: { title: 't', status: 'nope' }, idempotency_key: this.key() }, 'validation_failed'],
      ['aipcs_record_create', { service_id: ref('svc'), entity_name: 'note', record: { detail: 'no title' }, idempotency_key: this.key() }, 'validation_failed'],
      ['aipcs_record_create', { service_id: ref('svc'), entity_name: 'note', record: { title: 't' }, idempotency_key: '__aipcs_x' }, 'validation_failed', 'idempotency_key'],
      ['aipcs_record_delete', { service_id: ref('svc'), entity_name: 'project', record_id: ref('project0'), expected_record_version: 1, idempotency_key: this.key() }, 'constraint_violation'],
      ['aipcs_branch_create', { service_id: ref('svc'), slug: 'branch-0', title: 't', intent: 'i', idempotency_key: this.key() }, 'already_exists'],
      ['aipcs_branch_create', { service_id: ref('svc'), slug: 'branch-0', title: 't', intent: 'i', parent_branch_id: ref('other_branch'), idempotency_key: this.key() }, 'not_found'],
      ['aipcs_branch_create', { service_id: ref('svc'), slug: 'fresh-slug', title: 't', intent: 'i', retrieval_summary: '  ', idempotency_key: this.key() }, 'validation_failed', 'retrieval_summary'],
      ['aipcs_branch_update', { service_id: ref('svc'), branch_id: ref('b0'), expected_branch_revision: 1, updates: {}, idempotency_key: this.key() }, 'validation_failed'],
      ['aipcs_branch_update', { service_id: ref('svc'), branch_id: ref('b0'), expected_branch_revision: 1, updates: { status: null }, idempotency_key: this.key() }, 'validation_failed'],
      ['aipcs_branch_update', { service_id: ref('svc'), branch_id: ref('other_branch'), expected_branch_revision: 1, updates: { title: 'x' }, idempotency_key: this.key() }, 'not_found'],
      ['aipcs_branch_assign_records', { service_id: ref('svc'), branch_id: ref('b0'), role: 'primary', operation: 'assign', records: [{ entity_name: 'nope', record_id: randomUUID(), expected_record_version: 1 }], idempotency_key: this.key() }, 'validation_failed'],
      ['aipcs_branch_assign_records', { service_id: ref('svc'), branch_id: ref('b0'), role: 'primary', operation: 'assign', records: [{ entity_name: 'note', record_id: ref('other_record'), expected_record_version: 1 }], idempotency_key: this.key() }, 'not_found'],
      ['aipcs_branch_assign_records', { service_id: ref('svc'), branch_id: ref('b0'), role: 'primary', operation: 'assign', records: [{ entity_name: 'note', record_id: ref('r1'), expected_record_version: 1 }, { entity_name: 'note', record_id: ref('r1'), expected_record_version: 1 }], idempotency_key: this.key() }, 'validation_failed'],
      ['aipcs_maintenance_scan', { service_id: ref('svc'), entity_name: 'nope' }, 'validation_failed'],
      ['aipcs_maintenance_scan', { service_id: ref('svc'), scan_types: ['stale', 'stale'] }, 'validation_failed', 'scan_types'],
      ['aipcs_maintenance_scan', { service_id: ref('svc'), low_confidence_below: true }, 'validation_failed', 'low_confidence_below'],
    ];
    for (const [tool, args, code, path] of cases) {
      const call = { tool, args, mutation: `order ${code}` };
      const answers = await this.send(call);
      await this.observe(call, answers);
      for (const [i, answer] of answers.entries()) {
        if (answer === null) continue;
        const got = answer.envelope.ok ? 'ok' : answer.envelope.error?.code;
        const issues = answer.envelope.error?.issues ?? [];
        const context = `${this.backends[i]?.name} ${tool} ${JSON.stringify(args, (_, v: unknown) => (typeof v === 'object' && v !== null && 'manifest_version' in v ? '<schema>' : v)).slice(0, 200)}`;
        if (got !== code) this.problems.push(`${context}: expected ${code}, got ${got} ${JSON.stringify(issues).slice(0, 200)}`);
        else if (path !== undefined && !issues.some((issue) => issue.path === path || issue.path.startsWith(`${path}.`))) this.problems.push(`${context}: expected an issue at ${path}, got ${JSON.stringify(issues).slice(0, 300)}`);
        else if (tool === 'aipcs_server_info' && issues.length > 0) this.problems.push(`${context}: server_info refusal carries issues`);
      }
    }
  }

  /** Every bound of Appendix A and §10 just under, at and just over, in code points (astral and accented characters too). */
  async boundSweep(): Promise<void> {
    const svc = ref('svc');
    const record = this.liveRecord();
    const branch = this.pick(this.branches);
    const text = (n: number, unit: string) => Array.from({ length: n }, () => unit).join('');
    const base: Record<string, () => Record<string, unknown>> = {
      aipcs_service_seed: () => ({ domain_name: 'bounds', domain_class: 'c', intent_description: 'i', idempotency_key: this.key() }),
      aipcs_service_list: () => ({}),
      aipcs_bootstrap: () => ({}),
      aipcs_service_summary: () => ({ service_id: svc }),
      aipcs_record_list: () => ({ service_id: svc, entity_name: 'note' }),
      aipcs_record_history: () => ({ service_id: svc, entity_name: 'note' }),
      aipcs_record_search: () => ({ service_id: svc, entity_name: 'note', filters: { status: 'draft' } }),
      aipcs_branch_list: () => ({ service_id: svc }),
      aipcs_branch_create: () => ({ service_id: svc, slug: `s-${this.int(1e9)}`, title: 't', intent: 'i', idempotency_key: this.key() }),
      aipcs_branch_update: () => ({ service_id: svc, branch_id: ref(branch.label), expected_branch_revision: 1, updates: { title: 'x' }, idempotency_key: this.key() }),
      aipcs_record_create: () => ({ service_id: svc, entity_name: 'note', record: { title: 't' }, idempotency_key: this.key() }),
      aipcs_record_update: () => ({ service_id: svc, entity_name: record.entity, record_id: ref(record.label), expected_record_version: 1, updates: { title: 'x' }, idempotency_key: this.key() }),
      aipcs_maintenance_scan: () => ({ service_id: svc }),
      aipcs_branch_assign_records: () => ({ service_id: svc, branch_id: ref(branch.label), role: 'related', operation: 'unassign', records: [], idempotency_key: this.key() }),
    };
    const cases: [string, string, unknown, boolean][] = [];
    const stringBound = (tool: string, path: string, min: number, max: number, units: string[] = ['a', 'é', '😀']) => {
      for (const unit of units) {
        if (min > 1) cases.push([tool, path, text(min - 1, unit), false]);
        cases.push([tool, path, text(min, unit), true], [tool, path, text(max, unit), true], [tool, path, text(max + 1, unit), false]);
      }
    };
    const intBound = (tool: string, path: string, min: number | bigint, max: number | bigint) => {
      cases.push([tool, path, typeof min === 'bigint' ? min - 1n : min - 1, false], [tool, path, min, true], [tool, path, max, true], [tool, path, typeof max === 'bigint' ? max + 1n : max + 1, false]);
    };
    stringBound('aipcs_service_seed', 'domain_class', 1, 64);
    stringBound('aipcs_service_seed', 'intent_description', 1, 1000);
    stringBound('aipcs_service_seed', 'idempotency_key', 1, 128);
    cases.push(['aipcs_service_seed', 'domain_name', `b${'a'.repeat(62)}`, true], ['aipcs_service_seed', 'domain_name', `b${'a'.repeat(63)}`, false]);
    intBound('aipcs_service_list', 'limit', 1, 100);
    intBound('aipcs_bootstrap', 'limit', 1, 100);
    intBound('aipcs_service_summary', 'sample', 0, 3);
    for (const tool of ['aipcs_record_list', 'aipcs_record_history', 'aipcs_record_search', 'aipcs_branch_list', 'aipcs_maintenance_scan']) intBound(tool, 'limit', 1, 100);
    intBound('aipcs_maintenance_scan', 'stale_after_days', 1, 3650);
    cases.push(['aipcs_maintenance_scan', 'low_confidence_below', 0, true], ['aipcs_maintenance_scan', 'low_confidence_below', 1, true], ['aipcs_maintenance_scan', 'low_confidence_below', -0.0001, false], ['aipcs_maintenance_scan', 'low_confidence_below', 1.0001, false]);
    const scanTypes = ['expired', 'stale', 'low_confidence', 'superseded', 'missing_authority', 'unbranched', 'duplicate_authority', 'blob_candidate'];
    cases.push(['aipcs_maintenance_scan', 'scan_types', [], false], ['aipcs_maintenance_scan', 'scan_types', scanTypes, true], ['aipcs_maintenance_scan', 'scan_types', [...scanTypes, 'stale'], false]);
    cases.push(['aipcs_record_list', 'cursor', '', false], ['aipcs_record_list', 'cursor', 'a'.repeat(1025), false]);
    const filters = (n: number) => Object.fromEntries(['status', 'tags', 'priority', 'pinned', 'confidence', 'valid_until', 'title', 'provenance_source', 'project_id', 'superseded_by', 'status ', ' tags', 'priority ', ' pinned', 'confidence ', ' title', 'x1'].slice(0, n).map((k) => [k, k.includes('priority') ? 1 : k.includes('pinned') ? true : k.includes('confidence') ? 0.5 : k.includes('_id') || k.includes('superseded_by') ? randomUUID() : k.includes('valid') ? '2030-01-01T00:00:00Z' : 'a']));
    cases.push(['aipcs_record_search', 'filters', {}, false], ['aipcs_record_search', 'filters', filters(10), true], ['aipcs_record_search', 'filters', { ...filters(10), a1: 'x', a2: 'x', a3: 'x', a4: 'x', a5: 'x', a6: 'x', a7: 'x' }, false]);
    cases.push(['aipcs_record_search', 'filters', { tags: text(256, '😀') }, true], ['aipcs_record_search', 'filters', { tags: text(257, '😀') }, false]);
    stringBound('aipcs_branch_create', 'title', 1, 160);
    stringBound('aipcs_branch_create', 'intent', 1, 1000);
    stringBound('aipcs_branch_create', 'retrieval_summary', 1, 1000);
    cases.push(['aipcs_branch_create', 'slug', `s${'a'.repeat(63)}`, true], ['aipcs_branch_create', 'slug', `s${'a'.repeat(64)}`, false], ['aipcs_branch_create', 'slug', 'ab', false], ['aipcs_branch_create', 'slug', 'abc', true]);
    cases.push(['aipcs_branch_create', 'branch_type', `t${'a'.repeat(79)}`, true], ['aipcs_branch_create', 'branch_type', `t${'a'.repeat(80)}`, false]);
    stringBound('aipcs_branch_update', 'updates.title', 1, 160);
    stringBound('aipcs_branch_update', 'updates.retrieval_summary', 1, 1000);
    intBound('aipcs_branch_update', 'expected_branch_revision', 1, 9223372036854775807n);
    intBound('aipcs_record_update', 'expected_record_version', 1, 9223372036854775807n);
    cases.push(['aipcs_record_create', 'record.labels', Array.from({ length: 256 }, (_, i) => `${i}`), true], ['aipcs_record_create', 'record.labels', Array.from({ length: 257 }, (_, i) => `${i}`), false]);
    cases.push(['aipcs_record_create', 'record.labels', [text(256, '😀')], true], ['aipcs_record_create', 'record.labels', [text(257, '😀')], false], ['aipcs_record_create', 'record.labels', [''], false]);
    cases.push(['aipcs_record_create', 'record.detail', text(16384, 'a'), true], ['aipcs_record_create', 'record.detail', text(16385, 'a'), false]);
    cases.push(['aipcs_record_create', 'record.detail', text(4096, '😀'), true], ['aipcs_record_create', 'record.detail', `${text(4096, '😀')}a`, false]);
    cases.push(['aipcs_record_create', 'record.detail', text(8192, 'é'), true], ['aipcs_record_create', 'record.detail', `${text(8192, 'é')}a`, false]);
    cases.push(['aipcs_record_create', 'idempotency_key', text(128, '😀'), true], ['aipcs_record_create', 'idempotency_key', text(129, '😀'), false]);
    cases.push(['aipcs_branch_assign_records', 'records', [], false]);
    for (const [tool, path, value, valid] of cases) {
      const args = (base[tool] as () => Record<string, unknown>)();
      const steps = path.split('.');
      let node = args;
      for (const step of steps.slice(0, -1)) node = node[step] as Record<string, unknown>;
      node[steps[steps.length - 1] as string] = value;
      const call = { tool, args, mutation: `bound-sweep ${path} ${valid ? 'inside' : 'outside'}` };
      const answers = await this.send(call);
      await this.observe(call, answers);
      for (const [i, answer] of answers.entries()) {
        if (answer === null) continue;
        const error = answer.envelope.error;
        const flagged = error !== null && error.code === 'validation_failed' && error.issues.some((issue) => issue.path === path || issue.path.startsWith(`${path}.`));
        const shown = typeof value === 'string' ? `${[...value].length} code points of ${JSON.stringify([...value][0] ?? '')}` : Array.isArray(value) ? `${value.length} items` : typeof value === 'object' && value !== null ? `${Object.keys(value).length} entries` : String(value);
        if (valid && flagged) this.problems.push(`${this.backends[i]?.name} ${tool}: ${path} = ${shown} is inside the bound but was refused: ${JSON.stringify(error?.issues)}`);
        if (!valid && (answer.envelope.ok || (error?.code === 'validation_failed' && error.issues.length > 0 && !flagged))) this.problems.push(`${this.backends[i]?.name} ${tool}: ${path} = ${shown} is outside the bound but answered ${answer.envelope.ok ? 'ok' : JSON.stringify(error?.issues)}`);
      }
    }
  }

  /** §6.8: a search returns exactly the records whose fields equal every filter (numbers numerically, lists by membership). */
  async searchOracle(backend: Backend, svc: string, listed: Record<string, unknown>[]): Promise<void> {
    const filtersList: Record<string, unknown>[] = [
      { status: 'draft' },
      { status: 'superseded' },
      { tags: 'a' },
      { tags: 'release' },
      { priority: 1 },
      { priority: 3 },
      { pinned: true },
      { pinned: false },
      { confidence: 1 },
      { confidence: 0 },
      { confidence: 0.25 },
      { valid_until: '2020-01-01T00:00:00Z' },
      { valid_until: '2099-01-01T00:00:00+00:00' },
      { provenance_source: 'doc-1' },
      { project_id: backend.ids.get('project0') },
      { status: 'complete', tags: 'b' },
      { priority: 2, pinned: true },
    ];
    for (const filters of filtersList) {
      const found: string[] = [];
      let cursor: string | null = null;
      do {
        const envelope = await backend.client.call('aipcs_record_search', { service_id: svc, entity_name: 'note', filters, limit: 3, ...(cursor ? { cursor } : {}) });
        if (!envelope.ok) {
          this.problems.push(`${backend.name}: search ${JSON.stringify(filters)} answered ${envelope.error?.code}`);
          break;
        }
        found.push(...((envelope.result as Record<string, unknown>)['records'] as Record<string, unknown>[]).map((r) => r['id'] as string));
        cursor = (envelope.result as Record<string, unknown>)['next_cursor'] as string | null;
      } while (cursor !== null);
      const matches = (fields: Record<string, unknown>) =>
        Object.entries(filters).every(([k, v]) => {
          const value = fields[k];
          if (Array.isArray(value)) return value.includes(v);
          if (typeof value === 'number') return typeof v === 'number' && value === v;
          return value === v;
        });
      const stringFilter = Object.values(filters).some((v) => typeof v === 'string');
      const expected = listed.filter((r) => matches(r['fields'] as Record<string, unknown>)).map((r) => r['id'] as string);
      const relevant = (id: string) => !(stringFilter && this.padded.has(id));
      const want = expected.filter(relevant).sort();
      const got = found.filter(relevant).sort();
      if (new Set(found).size !== found.length) this.problems.push(`${backend.name}: search ${JSON.stringify(filters)} paged a record twice`);
      if (JSON.stringify(want) !== JSON.stringify(got)) this.problems.push(`${backend.name}: search ${JSON.stringify(filters)} found ${got.length}, expected ${want.length}`);
    }
  }

  // ------------------------------------------------------------ consistency

  async consistency(): Promise<void> {
    for (const backend of this.backends) {
      const svc = backend.ids.get('svc') as string;
      const call = async (tool: string, args: Record<string, unknown>) => (await backend.client.call(tool, args)).result as Record<string, unknown> | null;
      for (const entity of ['note', 'project']) {
        const listed: Record<string, unknown>[] = [];
        let cursor: string | null = null;
        do {
          const page = await call('aipcs_record_list', { service_id: svc, entity_name: entity, limit: 7, ...(cursor ? { cursor } : {}) });
          if (page === null) {
            this.problems.push(`${backend.name}: list ${entity} failed`);
            break;
          }
          listed.push(...(page['records'] as Record<string, unknown>[]));
          cursor = page['next_cursor'] as string | null;
        } while (cursor !== null);
        if (entity === 'note') await this.searchOracle(backend, svc, listed);
        const events: Record<string, unknown>[] = [];
        cursor = null;
        do {
          const page = await call('aipcs_record_history', { service_id: svc, entity_name: entity, limit: 100, ...(cursor ? { cursor } : {}) });
          if (page === null) break;
          events.push(...(page['events'] as Record<string, unknown>[]));
          cursor = page['next_cursor'] as string | null;
        } while (cursor !== null);
        const byRecord = new Map<string, number[]>();
        const lastAfter = new Map<string, unknown>();
        for (const event of events) {
          byRecord.set(event['id'] as string, [...(byRecord.get(event['id'] as string) ?? []), Number(event['record_version'])]);
          lastAfter.set(event['id'] as string, (event['after'] as { fields: unknown } | null)?.fields ?? null);
        }
        for (const [id, versions] of byRecord) {
          if (versions.some((v, i) => v !== i + 1)) this.problems.push(`${backend.name}: history of ${entity} ${id} has versions ${versions.join(',')}`);
        }
        for (const doc of listed) {
          const id = doc['id'] as string;
          const got = await call('aipcs_record_get', { service_id: svc, entity_name: entity, record_id: id });
          if (JSON.stringify(got) !== JSON.stringify(doc)) this.problems.push(`${backend.name}: list and get differ for ${entity} ${id}`);
          const versions = byRecord.get(id) ?? [];
          // Fields an evolve appended after the last event are null in the record and absent from the snapshot.
          const snapshot = (lastAfter.get(id) ?? {}) as Record<string, unknown>;
          const current = doc['fields'] as Record<string, unknown>;
          const differs = Object.keys(current).some((k) => (k in snapshot ? JSON.stringify(snapshot[k]) !== JSON.stringify(current[k]) : current[k] !== null)) || Object.keys(snapshot).some((k) => !(k in current));
          if (differs) this.problems.push(`${backend.name}: the last history snapshot of ${entity} ${id} differs from its fields`);
          if (versions[versions.length - 1] !== Number(doc['record_version'])) this.problems.push(`${backend.name}: ${entity} ${id} is version ${String(doc['record_version'])}, history ends at ${versions.join(',')}`);
          const fields = doc['fields'] as Record<string, unknown>;
          const key = entity === 'note' ? 'title' : 'name';
          const value = fields[key];
          if (typeof value === 'string' && value.length > 0 && !this.padded.has(id)) {
            const found: string[] = [];
            cursor = null;
            do {
              const page = await call('aipcs_record_search', { service_id: svc, entity_name: entity, filters: { [key]: value }, limit: 100, ...(cursor ? { cursor } : {}) });
              if (page === null) break;
              found.push(...(page['records'] as Record<string, unknown>[]).map((r) => r['id'] as string));
              cursor = page['next_cursor'] as string | null;
            } while (cursor !== null);
            if (!found.includes(id)) this.problems.push(`${backend.name}: search ${key}=${JSON.stringify(value).slice(0, 40)} misses ${entity} ${id}`);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- set-up

async function backendFor(profile: Awaited<ReturnType<typeof serverProfiles>>[number]): Promise<Backend> {
  const storage = await profile.fresh('fuzz-principal-a');
  const client = await startAipcs(storage.args, storage.env);
  const otherArgs = storage.args.map((arg) => (arg === 'fuzz-principal-a' ? 'fuzz-principal-b' : arg));
  const other = await startAipcs(otherArgs, storage.env);
  // With the catalogue listed, the SDK client also checks structuredContent against each tool's outputSchema.
  await client.client.listTools();
  const rawSession = rawLineSession(['serve', ...storage.args], storage.env);
  await rawSession.initialize();
  return {
    name: profile.name,
    client,
    other,
    raw: rawSession,
    ids: new Map(),
    async drop() {
      rawSession.close();
      await other.close();
      await client.close();
      await storage.drop();
    },
  };
}

async function setUp(fuzzer: Fuzzer): Promise<void> {
  const must = async (backend: Backend, client: AipcsClient, tool: string, args: Record<string, unknown>) => {
    // Arguments with exact big integers go over the raw session (principal a only); the rest through the SDK client.
    const envelope = hasRaw(args) ? (JSON.parse(await backend.raw.toolText(tool, rawText(resolve(args, backend)))) as Envelope) : await client.call(tool, resolve(args, backend) as Record<string, unknown>);
    if (!envelope.ok) throw new Error(`${backend.name} set-up ${tool}: ${JSON.stringify(envelope.error)}`);
    return envelope.result as Record<string, unknown>;
  };
  for (const backend of fuzzer.backends) {
    const service = async (client: AipcsClient, label: string, name: string, steps: number, exactBound = true) => {
      const seeded = await must(backend, client, 'aipcs_service_seed', { domain_name: name, domain_class: 'knowledge', intent_description: 'Fuzz target.', idempotency_key: `seed-${name}` });
      backend.ids.set(label, seeded['service_id'] as string);
      if (steps > 1) await must(backend, client, 'aipcs_service_design', { service_id: ref(label), schema: manifest(1, exactBound), idempotency_key: `design-${name}` });
      if (steps > 2) await must(backend, client, 'aipcs_service_materialise', { service_id: ref(label), expected_service_revision: 2, expected_schema_version: 1, idempotency_key: `mat-${name}` });
    };
    await service(backend.client, 'svc', 'notes', 3);
    await service(backend.client, 'seeded', 'seeded_only', 1);
    await service(backend.client, 'designed', 'designed_only', 2);
    await service(backend.other, 'other_svc', 'notes', 3, false);
    const project = await must(backend, backend.client, 'aipcs_record_create', { service_id: ref('svc'), entity_name: 'project', record: { name: 'P', code: 'p0' }, idempotency_key: 'p0' });
    backend.ids.set('project0', (project['record'] as Record<string, unknown>)['id'] as string);
    const otherRecord = await must(backend, backend.other, 'aipcs_record_create', { service_id: ref('other_svc'), entity_name: 'note', record: { title: 'theirs' }, idempotency_key: 'o' });
    backend.ids.set('other_record', (otherRecord['record'] as Record<string, unknown>)['id'] as string);
    const otherBranch = await must(backend, backend.other, 'aipcs_branch_create', { service_id: ref('other_svc'), slug: 'theirs', title: 'T', intent: 'I', idempotency_key: 'ob' });
    backend.ids.set('other_branch', (otherBranch['branch'] as Record<string, unknown>)['id'] as string);
  }
  fuzzer.records.push({ label: 'project0', entity: 'project', version: 1, deleted: false });
  // Records, branches and memberships through the fuzzer itself, so every backend learns the same labels.
  for (let i = 0; i < 6; i++) {
    const call = { tool: 'aipcs_record_create', args: { service_id: ref('svc'), entity_name: 'note', record: { ...fuzzer.validRecord(), project_id: ref('project0') }, idempotency_key: `seed-note-${i}` }, mutation: 'setup' };
    await fuzzer.observe(call, await fuzzer.send(call));
  }
  for (let i = 0; i < 3; i++) {
    const call = {
      tool: 'aipcs_branch_create',
      args: { service_id: ref('svc'), slug: `branch-${i}`, title: `Branch ${i}`, intent: 'Fuzzing.', ...(i > 0 ? { parent_branch_id: ref('b0') } : {}), idempotency_key: `seed-branch-${i}` },
      mutation: 'setup',
    };
    await fuzzer.observe(call, await fuzzer.send(call));
  }
  const assign = {
    tool: 'aipcs_branch_assign_records',
    args: {
      service_id: ref('svc'),
      branch_id: ref('b0'),
      role: 'primary',
      operation: 'assign',
      records: fuzzer.records.slice(1, 4).map((r) => ({ entity_name: r.entity, record_id: ref(r.label), expected_record_version: r.version })),
      idempotency_key: 'seed-assign',
    },
    mutation: 'setup',
  };
  await fuzzer.observe(assign, await fuzzer.send(assign));
}

// ---------------------------------------------------------------- the test

const profiles = await serverProfiles();

describe(`tool argument fuzzing, seed ${SEED}, ${CALLS} calls (${profiles.map((p) => p.name).join(' vs ')})`, () => {
  const backends: Backend[] = [];
  beforeAll(async () => {
    for (const profile of profiles) backends.push(await backendFor(profile));
  });
  afterAll(async () => {
    for (const backend of backends) await backend.drop();
  });

  it('reads raw answer lines whose multi-byte characters straddle pipe chunks intact', async () => {
    // structuredContent is written unescaped: a 16 KiB run of 'é' makes a ~70 KiB line that the pipe splits, often inside a character.
    for (const backend of backends) await straddle(backend);
  });

  async function straddle(backend: Backend): Promise<void> {
    const tool = async (name: string, args: Record<string, unknown>) => (JSON.parse(await backend.raw.toolText(name, rawText(args))) as Envelope).result as Record<string, unknown>;
    const serviceId = (await tool('aipcs_service_seed', { domain_name: 'straddle', domain_class: 'c', intent_description: 'i', idempotency_key: 'straddle-s' }))['service_id'] as string;
    await tool('aipcs_service_design', { service_id: serviceId, schema: resolve(manifest(1), backend), idempotency_key: 'straddle-d' });
    await tool('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'straddle-m' });
    for (let n = 0; n < 5; n++) {
      const id = 900_000 + n;
      const detail = `${'x'.repeat(n)}${'é'.repeat(8190)}`;
      const line = await backend.raw.send(
        JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'aipcs_record_create', arguments: { service_id: serviceId, entity_name: 'note', record: { title: 't', detail }, idempotency_key: `straddle-${n}` } } }),
        id,
      );
      const result = (JSON.parse(line) as { result: { content: { text: string }[]; structuredContent: Envelope } }).result;
      expect(result.structuredContent).toEqual(JSON.parse(result.content[0]?.text ?? ''));
      expect((result.structuredContent.result?.['record'] as { fields: { detail: string } }).fields.detail).toBe(detail);
    }
  }

  it('answers every mutated call with a listed code, no internals, alike on every backend, and leaves the store consistent', { timeout: 600_000 }, async () => {
    const fuzzer = new Fuzzer(backends, SEED);
    await setUp(fuzzer);
    await fuzzer.orderSweep();
    await fuzzer.boundSweep();
    await fuzzer.run(CALLS);
    if (process.env['AIPCS_FUZZ_CONCURRENT']) await fuzzer.runConcurrent(Number(process.env['AIPCS_FUZZ_CONCURRENT']), Number(process.env['AIPCS_FUZZ_WIDTH'] ?? 8));
    // The servers are still alive and answer.
    for (const backend of backends) {
      expect((await backend.client.call('aipcs_server_info')).ok).toBe(true);
      expect(JSON.parse(await backend.raw.toolText('aipcs_server_info', '{}')).ok).toBe(true);
      expect(backend.client.stderr()).not.toMatch(/\n\s+at |SQLITE_|ECONN/);
    }
    for (let n = 0; n < Number(process.env['AIPCS_FUZZ_MANIFESTS'] ?? 1); n++) await fuzzer.composedService(n);
    await fuzzer.consistency();
    if (process.env['AIPCS_FUZZ_REPORT']) console.log(`composed services materialised: ${fuzzer.composedCount}`);
    if (process.env['AIPCS_FUZZ_REPORT']) console.log([...fuzzer.codes].sort().map(([k, v]) => `${k}: ${v}`).join('\n'));
    if (process.env['AIPCS_FUZZ_PROBLEMS']) writeFileSync(process.env['AIPCS_FUZZ_PROBLEMS'], fuzzer.problems.join('\n'));
    expect(fuzzer.problems).toEqual([]);
  });
});
