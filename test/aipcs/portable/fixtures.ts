// Literal fixtures for the portable codec tests: the §5.8 conformance vector
// (bytes and logical content), a small materialised service with every field
// type, and helpers to stream bytes and collect what the writer sinks.

import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { canonicalJson, parseJson, type JsonObject, type JsonValue } from '../../../src/common/json.js';
import { manifestToJson, validateManifest } from '../../../src/aipcs/contract/manifest/validate-manifest.js';
import type { ManifestV2 } from '../../../src/aipcs/contract/manifest/types.js';
import {
  BundleInvalidError,
  parseTimestamp27,
  readBundleItems,
  writeBundle,
  type BundleBranch,
  type BundleContent,
  type BundleDefect,
  type BundleHeader,
  type BundleHistoryEvent,
  type BundleMembership,
  type BundleRecord,
  type BundleService,
  type BundleSummary,
} from '../../../src/aipcs/portable/index.js';
import { encodeBranch, encodeHeader, encodeHistory, encodeMembership, encodeRecord, encodeService } from '../../../src/aipcs/portable/payload-codec.js';

export const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The three lines of operations spec §5.8, the third one unwrapped and the empty digest spelled out. */
export const VECTOR_LINES = [
  '{"kind":"header","ordinal":0,"payload":{"canonicalization":"aipcs-json-c14n-1","created_at":"2026-01-02T03:04:05.000006Z","export_format_version":1,"limit_profile":"aipcs-bundle-limits-1","producer_mcp_contract":"1.2.0","producer_package":"aipcs","producer_package_version":"0.1.1","source_backend":"sqlite"},"sha256":"77f20f1d3763f1be5d5f0ecfdcc506db9e6da19ec4c4b2e2a17c18df45f68da6"}',
  '{"kind":"service","ordinal":1,"payload":{"created_at":"2026-01-01T00:00:00.000000Z","design_state":"seeded","domain_class":"knowledge","domain_name":"release_notes","export_fence_generation":null,"export_fence_state":null,"intent_description":"Example seeded service.","last_activity_at":"2026-01-01T00:00:00.000000Z","manifest":null,"materialised_at":null,"operational_status":"suspended","schema_version":null,"service_id":"11111111-2222-4333-8444-555555555555","service_revision":2,"updated_at":"2026-01-01T00:00:01.000000Z"},"sha256":"352bb57a665994b380cb9f49bf5feb9280125168fb7d5e07fae3beff83ee3b94"}',
  '{"kind":"trailer","ordinal":2,"payload":{"pre_trailer_byte_count":992,"root_sha256":"dcd5c9e8ceae33873739727e1a235e79aa10822821afe4d695a504cf040689cd",' +
    `"sections":[{"count":1,"kind":"header","sha256":"74d95defbed9c49c959ff736a8c7d4fd6567b321bc1ea235e0d4c42277065aa2"},{"count":1,"kind":"service","sha256":"b71fe0e09a517e1411aa6e7b9fbf61a6bd2ce155281de972686cbba5822ea49a"},{"count":0,"kind":"record","sha256":"${EMPTY}"},{"count":0,"kind":"history","sha256":"${EMPTY}"},{"count":0,"kind":"branch","sha256":"${EMPTY}"},{"count":0,"kind":"branch_membership","sha256":"${EMPTY}"},{"count":0,"kind":"audit","sha256":"${EMPTY}"}]}}`,
];

export const VECTOR_BYTES = Buffer.from(VECTOR_LINES.map((line) => `${line}\n`).join(''), 'utf8');

export function t(text: string): bigint {
  const micros = parseTimestamp27(text);
  if (micros === undefined) throw new Error(`bad fixture time ${text}`);
  return micros;
}

export function vectorContent(): BundleContent {
  return {
    header: { producerPackageVersion: '0.1.1', producerMcpContract: '1.2.0', createdAt: t('2026-01-02T03:04:05.000006Z'), sourceBackend: 'sqlite' },
    service: {
      serviceId: '11111111-2222-4333-8444-555555555555',
      domainName: 'release_notes',
      domainClass: 'knowledge',
      intentDescription: 'Example seeded service.',
      designState: 'seeded',
      operationalStatus: 'suspended',
      manifest: null,
      schemaVersion: null,
      serviceRevision: 2n,
      createdAt: t('2026-01-01T00:00:00.000000Z'),
      updatedAt: t('2026-01-01T00:00:01.000000Z'),
      lastActivityAt: t('2026-01-01T00:00:00.000000Z'),
      materialisedAt: null,
      exportFence: null,
    },
    records: [],
    history: [],
    branches: [],
    memberships: [],
  };
}

// ---------------------------------------------------------------------------
// A materialised service with every attribute type

export const NOTE_MANIFEST_TEXT = `{
  "manifest_version": 2,
  "schema_version": 1,
  "entities": [
    {"name": "note", "attributes": [
      {"name": "id", "type": "uuid", "required": true, "primary_key": true},
      {"name": "owner_id", "type": "string", "required": true},
      {"name": "created_at", "type": "datetime", "required": true},
      {"name": "updated_at", "type": "datetime", "required": true},
      {"name": "created_via", "type": "string", "required": true},
      {"name": "record_version", "type": "integer", "required": true},
      {"name": "title", "type": "string", "required": true},
      {"name": "status", "type": "string", "allowed_values": ["open", "done", "superseded"]},
      {"name": "tags", "type": "string_list", "retrieval_mode": "membership"},
      {"name": "detail", "type": "string", "retrieval_mode": "annotation"},
      {"name": "confidence", "type": "number"},
      {"name": "count", "type": "integer"},
      {"name": "done", "type": "boolean"},
      {"name": "due", "type": "datetime"},
      {"name": "ref", "type": "uuid"}
    ]},
    {"name": "person", "attributes": [
      {"name": "id", "type": "uuid", "required": true, "primary_key": true},
      {"name": "owner_id", "type": "string", "required": true},
      {"name": "created_at", "type": "datetime", "required": true},
      {"name": "updated_at", "type": "datetime", "required": true},
      {"name": "created_via", "type": "string", "required": true},
      {"name": "record_version", "type": "integer", "required": true},
      {"name": "name", "type": "string", "required": true}
    ]}
  ],
  "relationships": [],
  "indices": [],
  "query_patterns": [],
  "discovery_facets": [{"entity": "note", "field": "status"}],
  "retrieval_guidance": null,
  "migration_history": []
}`;

export function noteManifest(): ManifestV2 {
  const checked = validateManifest(parseJson(NOTE_MANIFEST_TEXT));
  if (!checked.ok) throw new Error('fixture manifest is invalid');
  return checked.manifest;
}

export function noteManifestJson(): JsonObject {
  return manifestToJson(noteManifest());
}

export function materialisedService(overrides: Partial<BundleService> = {}): BundleService {
  return {
    serviceId: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
    domainName: 'field_notes',
    domainClass: 'knowledge',
    intentDescription: 'Notes taken in the field.',
    designState: 'materialised',
    operationalStatus: 'archived',
    manifest: noteManifestJson(),
    schemaVersion: 1,
    serviceRevision: 7n,
    createdAt: t('2026-01-01T00:00:00.000000Z'),
    updatedAt: t('2026-02-01T00:00:00.000000Z'),
    lastActivityAt: t('2026-02-01T00:00:00.000000Z'),
    materialisedAt: t('2026-01-01T00:00:02.000000Z'),
    exportFence: { generation: 3n, state: 'closed' },
    ...overrides,
  };
}

export const HEADER: BundleHeader = { producerPackageVersion: '0.1.0', producerMcpContract: '1.2.0', createdAt: t('2026-03-04T05:06:07.000008Z'), sourceBackend: 'postgresql' };

export const IDS = {
  note1: '10000000-0000-4000-8000-000000000001',
  note2: '20000000-0000-4000-8000-000000000002',
  note3: '30000000-0000-4000-8000-000000000003',
  person1: '40000000-0000-4000-8000-000000000004',
  branchA: 'a0000000-0000-4000-8000-00000000000a',
  branchB: 'b0000000-0000-4000-8000-00000000000b',
} as const;

const noteFields1 = {
  title: 'Release décision ✓ "quoted" \\ back',
  status: 'open',
  tags: ['release', 'q1'],
  detail: 'line one\nline two\ttab \u0001 ctrl \u007f del \u2028 sep 😀',
  confidence: 0.75,
  count: 9007199254740993n,
  done: false,
  due: '2026-05-01T00:00:00Z',
  ref: IDS.person1,
};

/** Content of the materialised fixture, each section in canonical order. */
export function materialisedContent(): {
  header: BundleHeader;
  service: BundleService;
  records: BundleRecord[];
  history: BundleHistoryEvent[];
  branches: BundleBranch[];
  memberships: BundleMembership[];
} {
  const noteFields1v2 = { ...noteFields1, status: 'done', confidence: 1, done: true };
  const records: BundleRecord[] = [
    { entityName: 'note', recordId: IDS.note1, recordVersion: 3n, createdAt: t('2026-01-05T00:00:00.000000Z'), updatedAt: t('2026-01-06T00:00:00.000000Z'), createdVia: 'mcp', fields: noteFields1v2 },
    { entityName: 'note', recordId: IDS.note3, recordVersion: 1n, createdAt: t('2026-01-07T00:00:00.000000Z'), updatedAt: t('2026-01-07T00:00:00.000000Z'), createdVia: 'mcp', fields: { title: 'Minimal', status: null, confidence: -1.5e-7, count: -9223372036854775808n } },
    { entityName: 'person', recordId: IDS.person1, recordVersion: 1n, createdAt: t('2026-01-04T00:00:00.000000Z'), updatedAt: t('2026-01-04T00:00:00.000000Z'), createdVia: 'mcp', fields: { name: 'Ada' } },
  ];
  const history: BundleHistoryEvent[] = [
    { entityName: 'note', recordId: IDS.note1, recordVersion: 1n, kind: 'create', occurredAt: t('2026-01-05T00:00:00.000000Z'), before: null, after: noteFields1 },
    { entityName: 'note', recordId: IDS.note1, recordVersion: 2n, kind: 'update', occurredAt: t('2026-01-06T00:00:00.000000Z'), before: noteFields1, after: noteFields1v2 },
    { entityName: 'note', recordId: IDS.note1, recordVersion: 3n, kind: 'primary_assign', occurredAt: t('2026-01-06T00:00:00.000000Z'), before: noteFields1v2, after: noteFields1v2 },
    { entityName: 'note', recordId: IDS.note2, recordVersion: 1n, kind: 'create', occurredAt: t('2026-01-05T00:00:00.000000Z'), before: null, after: { title: 'Gone' } },
    { entityName: 'note', recordId: IDS.note2, recordVersion: 2n, kind: 'delete', occurredAt: t('2026-01-05T00:00:01.000000Z'), before: { title: 'Gone' }, after: null },
    { entityName: 'note', recordId: IDS.note3, recordVersion: 1n, kind: 'create', occurredAt: t('2026-01-07T00:00:00.000000Z'), before: null, after: { title: 'Minimal', status: null, confidence: -1.5e-7, count: -9223372036854775808n } },
    { entityName: 'person', recordId: IDS.person1, recordVersion: 1n, kind: 'create', occurredAt: t('2026-01-04T00:00:00.000000Z'), before: null, after: { name: 'Ada' } },
  ];
  const branches: BundleBranch[] = [
    { branchId: IDS.branchA, slug: 'release-q1', title: 'Release Q1', intent: 'Track the release.', branchType: 'release', parentBranchId: null, status: 'active', retrievalSummary: null, createdAt: t('2026-01-05T00:00:00.000000Z'), updatedAt: t('2026-01-05T00:00:00.000000Z'), branchRevision: 1n },
    { branchId: IDS.branchB, slug: 'release-q1-notes', title: 'Notes', intent: 'Child branch.', branchType: null, parentBranchId: IDS.branchA, status: 'archived', retrievalSummary: 'Summary.', createdAt: t('2026-01-05T00:00:00.000000Z'), updatedAt: t('2026-01-06T00:00:00.000000Z'), branchRevision: 2n },
  ];
  const memberships: BundleMembership[] = [
    { branchId: IDS.branchA, entityName: 'note', recordId: IDS.note1, role: 'primary' },
    { branchId: IDS.branchA, entityName: 'person', recordId: IDS.person1, role: 'related' },
    { branchId: IDS.branchB, entityName: 'note', recordId: IDS.note1, role: 'related' },
  ];
  return { header: HEADER, service: materialisedService(), records, history, branches, memberships };
}

// ---------------------------------------------------------------------------
// Streams

export async function writeToBytes(content: BundleContent): Promise<{ bytes: Buffer; summary: BundleSummary }> {
  const chunks: Uint8Array[] = [];
  const summary = await writeBundle(content, (chunk) => {
    chunks.push(Uint8Array.from(chunk));
  });
  return { bytes: Buffer.concat(chunks), summary };
}

/** The bytes as a stream of chunks of the given size (1 exercises every line boundary). */
export async function* chunked(bytes: Uint8Array, size = 65536): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, Math.min(bytes.length, offset + size));
}

export interface ReadBack {
  header: BundleHeader | null;
  service: BundleService | null;
  records: BundleRecord[];
  history: BundleHistoryEvent[];
  branches: BundleBranch[];
  memberships: BundleMembership[];
  summary: BundleSummary | null;
}

/** Reads everything the reader yields into arrays (tests only: real callers stream). */
export async function readAll(bytes: Uint8Array, chunkSize?: number): Promise<ReadBack> {
  const out: ReadBack = { header: null, service: null, records: [], history: [], branches: [], memberships: [], summary: null };
  for await (const item of readBundleItems(chunked(bytes, chunkSize))) {
    switch (item.kind) {
      case 'header':
        out.header = item.value;
        break;
      case 'service':
        out.service = item.value;
        break;
      case 'record':
        out.records.push(item.value);
        break;
      case 'history':
        out.history.push(item.value);
        break;
      case 'branch':
        out.branches.push(item.value);
        break;
      case 'branch_membership':
        out.memberships.push(item.value);
        break;
      case 'end':
        out.summary = item.value;
        break;
    }
  }
  return out;
}

/**
 * Reads an artefact back and writes its content again with the general
 * writer (canonicalJson of each frame, in the test process): an export is
 * right when the two are the same bytes.
 */
export async function rewrittenByGeneralWriter(bytes: Uint8Array): Promise<{ readBack: ReadBack; rewritten: Buffer }> {
  const readBack = await readAll(bytes);
  const { header, service, records, history, branches, memberships } = readBack;
  if (header === null || service === null) throw new Error('the artefact has no header or service line');
  const chunks: Buffer[] = [];
  await writeBundle({ header, service, records, history, branches, memberships }, (chunk) => {
    chunks.push(Buffer.from(chunk));
  });
  return { readBack, rewritten: Buffer.concat(chunks) };
}

/** The defect a read of these bytes fails with, or null when the read succeeds. */
export async function defectOf(bytes: Uint8Array, chunkSize?: number): Promise<BundleDefect | null> {
  try {
    await readAll(bytes, chunkSize);
    return null;
  } catch (error) {
    if (error instanceof BundleInvalidError) return error.reason;
    throw error;
  }
}

export async function expectDefect(bytes: Uint8Array, reason: BundleDefect): Promise<void> {
  expect(await defectOf(bytes)).toBe(reason);
}

/** Splits an artefact into its lines (without LF). */
export function linesOf(bytes: Uint8Array): string[] {
  const text = Buffer.from(bytes).toString('utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text.slice(0, -1).split('\n');
}

export function joinLines(lines: readonly string[]): Buffer {
  return Buffer.from(lines.map((line) => `${line}\n`).join(''), 'utf8');
}

// ---------------------------------------------------------------------------
// Hand-built artefacts: correct framing and digests around arbitrary payloads,
// so the reader's content rules can be tested past the digest checks.

const SECTION_ORDER = ['header', 'service', 'record', 'history', 'branch', 'branch_membership', 'audit'] as const;

/** A frame line (no LF) for a payload, digest included, built with the test's own hashing. */
export function frameLine(kind: string, ordinal: number, payload: JsonValue): string {
  const covered = canonicalJson({ kind, ordinal: BigInt(ordinal), payload });
  const digest = createHash('sha256').update(covered).digest('hex');
  return `${covered.slice(0, -1)},"sha256":"${digest}"}`;
}

/** The trailer line (no LF) that matches these frame lines. */
export function trailerLine(lines: readonly string[]): string {
  const root = createHash('sha256');
  const sections = new Map<string, { count: number; hash: ReturnType<typeof createHash> }>(SECTION_ORDER.map((kind) => [kind, { count: 0, hash: createHash('sha256') }]));
  let bytes = 0;
  for (const line of lines) {
    const withLf = `${line}\n`;
    root.update(withLf);
    bytes += Buffer.byteLength(withLf);
    const kind = (JSON.parse(line) as { kind: string }).kind;
    const section = sections.get(kind);
    if (section) {
      section.count++;
      section.hash.update(withLf);
    }
  }
  return canonicalJson({
    kind: 'trailer',
    ordinal: BigInt(lines.length),
    payload: {
      pre_trailer_byte_count: BigInt(bytes),
      root_sha256: root.digest('hex'),
      sections: SECTION_ORDER.map((kind) => {
        const section = sections.get(kind) as { count: number; hash: ReturnType<typeof createHash> };
        return { count: BigInt(section.count), kind, sha256: section.hash.digest('hex') };
      }),
    },
  });
}

/** A whole artefact from (kind, payload) pairs, ordinals assigned in order. */
export function rawBundle(frames: readonly (readonly [string, JsonValue])[]): Buffer {
  const lines = frames.map(([kind, payload], ordinal) => frameLine(kind, ordinal, payload));
  return joinLines([...lines, trailerLine(lines)]);
}

/** The payloads the writer would produce for the materialised fixture, as (kind, payload) pairs. */
export function materialisedFrames(): [string, JsonObject][] {
  const content = materialisedContent();
  return [
    ['header', encodeHeader(content.header)],
    ['service', encodeService(content.service)],
    ...content.records.map((value): [string, JsonObject] => ['record', encodeRecord(value)]),
    ...content.history.map((value): [string, JsonObject] => ['history', encodeHistory(value)]),
    ...content.branches.map((value): [string, JsonObject] => ['branch', encodeBranch(value)]),
    ...content.memberships.map((value): [string, JsonObject] => ['branch_membership', encodeMembership(value)]),
  ];
}
