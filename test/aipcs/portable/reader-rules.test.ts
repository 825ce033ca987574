// Every rule the reader enforces, each broken once in an otherwise valid
// artefact whose framing and digests are correct, so the refusal comes from
// the rule itself: framing, frames, payloads, order and cross-references.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonObject } from '../../../src/common/json.js';
import { BundleInvalidError, type BundleDefect } from '../../../src/aipcs/portable/index.js';
import { readWithLimits } from '../../../src/aipcs/portable/bundle-reader.js';
import { DEFAULT_LIMITS } from '../../../src/aipcs/portable/format.js';
import { IDS, VECTOR_BYTES, chunked, defectOf, frameLine, joinLines, linesOf, materialisedFrames, rawBundle, trailerLine } from './fixtures.js';

type Frames = [string, JsonObject][];

function edit(frames: Frames, index: number, change: (payload: JsonObject) => JsonObject): Frames {
  return frames.map(([kind, payload], i) => [kind, i === index ? change(payload) : payload]);
}

function without(frames: Frames, index: number): Frames {
  return frames.filter((_frame, i) => i !== index);
}

function swap(frames: Frames, a: number, b: number): Frames {
  const out = [...frames];
  [out[a], out[b]] = [out[b] as [string, JsonObject], out[a] as [string, JsonObject]];
  return out;
}

const F = materialisedFrames();
// Positions in the materialised fixture: 0 header, 1 service, 2-4 records
// (note1, note3, person1), 5-11 history (note1 x3, note2 x2, note3, person1),
// 12-13 branches (A, B child of A), 14-16 memberships.
const REC = 2;
const HIS = 5;
const BR = 12;
const MEM = 14;
const fields = (payload: JsonObject): JsonObject => payload['fields'] as JsonObject;

describe('reader rules', () => {
  it('accepts the untouched fixture', async () => {
    expect(await defectOf(rawBundle(F))).toBeNull();
  });

  it('accepts a record or branch updated "before" it was created (§5.4 orders no times; wall clocks step back)', async () => {
    expect(await defectOf(rawBundle(edit(F, REC, (p) => ({ ...p, created_at: '2027-01-01T00:00:00.000000Z' }))))).toBeNull();
    expect(await defectOf(rawBundle(edit(F, BR + 1, (p) => ({ ...p, created_at: '2027-01-01T00:00:00.000000Z' }))))).toBeNull();
  });

  // A stored record may hold 64 KiB of values; an evolve then appends
  // fields, null in it, whose `"name":null` entries take its complete field
  // set past 64 KiB. The store keeps and serves it, so the artefact must
  // carry it: export refused it as invalid content and froze the service
  // (recovery_required). The bound applies to the values a record holds.
  it('accepts a record whose values fit 64 KiB although its null fields take it past', async () => {
    const values: JsonObject = { detail: 'x'.repeat(16384), tags: [], title: 'y'.repeat(16384) };
    const tags: string[] = [];
    const size = () => Buffer.byteLength(JSON.stringify({ ...values, tags }));
    while (size() < 65536) tags.push(`${tags.length}`.padEnd(Math.min(256, 65536 - size() - 3), 'z'));
    expect(size()).toBe(65536);
    const atBound = edit(F, REC, (p) => ({ ...p, fields: { ...values, tags, status: null, confidence: null, count: null, done: null, due: null, ref: null } }));
    expect(await defectOf(rawBundle(atBound))).toBeNull();
    const overBound = edit(F, REC, (p) => ({ ...p, fields: { ...values, tags: [...tags.slice(0, -1), `${tags.at(-1) ?? ''}z`], status: null } }));
    expect(await defectOf(rawBundle(overBound))).toBe('record_fields_invalid');
  });

  it('accepts text and names at their bounds', async () => {
    const atBounds = edit(
      edit(F, 1, (p) => ({ ...p, domain_class: 'k'.repeat(64), intent_description: 'i'.repeat(1000) })),
      BR,
      (p) => ({ ...p, slug: 'abc', title: 't'.repeat(160), intent: 'i'.repeat(1000), branch_type: 'r'.repeat(80), retrieval_summary: 's'.repeat(1000) }),
    );
    expect(await defectOf(rawBundle(edit(atBounds, 0, (p) => ({ ...p, producer_package_version: '1'.repeat(64) }))))).toBeNull();
  });

  // A seeded service: no manifest, no schema version, no fence, no members.
  const seeded: Frames = edit(F.slice(0, 2), 1, (p) => ({ ...p, design_state: 'seeded', materialised_at: null, export_fence_generation: null, export_fence_state: null, manifest: null, schema_version: null }));

  it('accepts a seeded service, and refuses one carrying what only materialisation gives', async () => {
    expect(await defectOf(rawBundle(seeded))).toBeNull();
    expect(await defectOf(rawBundle(edit(seeded, 1, (p) => ({ ...p, schema_version: 1n }))))).toBe('service_invalid');
    expect(await defectOf(rawBundle(edit(seeded, 1, (p) => ({ ...p, materialised_at: '2026-01-01T00:00:02.000000Z' }))))).toBe('service_invalid');
    expect(await defectOf(rawBundle(edit(seeded, 1, (p) => ({ ...p, export_fence_state: 'closed' }))))).toBe('fence_invalid');
    // Materialised without its manifest, even with no member needing one.
    expect(await defectOf(rawBundle(edit(F.slice(0, 2), 1, (p) => ({ ...p, manifest: null, schema_version: null }))))).toBe('service_invalid');
  });

  it.each<[string, Frames, BundleDefect]>([
    // header and service
    ['format version 2', edit(F, 0, (p) => ({ ...p, export_format_version: 2n })), 'header_invalid'],
    ['another profile', edit(F, 0, (p) => ({ ...p, canonicalization: 'jcs' })), 'header_invalid'],
    ['a bad producer version', edit(F, 0, (p) => ({ ...p, producer_package_version: '-1' })), 'header_invalid'],
    ['an extra header key', edit(F, 0, (p) => ({ ...p, extra: null })), 'header_invalid'],
    ['a header time without fraction', edit(F, 0, (p) => ({ ...p, created_at: '2026-01-02T03:04:05Z' })), 'header_invalid'],
    ['a header on 30 February', edit(F, 0, (p) => ({ ...p, created_at: '2026-02-30T03:04:05.000000Z' })), 'header_invalid'],
    ['an unknown backend', edit(F, 0, (p) => ({ ...p, source_backend: 'mysql' })), 'header_invalid'],
    ['another limit profile', edit(F, 0, (p) => ({ ...p, limit_profile: 'aipcs-bundle-limits-2' })), 'header_invalid'],
    ['another producer package', edit(F, 0, (p) => ({ ...p, producer_package: 'aipcs-fork' })), 'header_invalid'],
    ['a producer version of 65 characters', edit(F, 0, (p) => ({ ...p, producer_package_version: '1'.repeat(65) })), 'header_invalid'],
    ['a missing service key', edit(F, 1, ({ updated_at: _dropped, ...rest }) => rest), 'service_invalid'],
    ['an uppercase service id', edit(F, 1, (p) => ({ ...p, service_id: 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE' })), 'service_invalid'],
    ['the nil service id', edit(F, 1, (p) => ({ ...p, service_id: '00000000-0000-0000-0000-000000000000' })), 'service_invalid'],
    ['padded registry text', edit(F, 1, (p) => ({ ...p, domain_class: ' knowledge' })), 'service_invalid'],
    ['a domain class of 65 characters', edit(F, 1, (p) => ({ ...p, domain_class: 'k'.repeat(65) })), 'service_invalid'],
    ['an intent description of 1001 characters', edit(F, 1, (p) => ({ ...p, intent_description: 'i'.repeat(1001) })), 'service_invalid'],
    ['service revision 0', edit(F, 1, (p) => ({ ...p, service_revision: 0n })), 'service_invalid'],
    ['a manifest that is no object', edit(F, 1, (p) => ({ ...p, manifest: [p['manifest'] as JsonObject] })), 'service_invalid'],
    ['a schema version unlike the manifest', edit(F, 1, (p) => ({ ...p, schema_version: 2n })), 'service_invalid'],
    ['an invalid manifest', edit(F, 1, (p) => ({ ...p, manifest: { ...(p['manifest'] as JsonObject), entities: [] } })), 'manifest_invalid'],
    ['an active materialised service', edit(F, 1, (p) => ({ ...p, operational_status: 'active' })), 'fence_invalid'],
    ['an open fence', edit(F, 1, (p) => ({ ...p, export_fence_state: 'open' })), 'fence_invalid'],
    ['fence generation 0', edit(F, 1, (p) => ({ ...p, export_fence_generation: 0n })), 'fence_invalid'],
    ['a seeded service with a fence', edit(F, 1, (p) => ({ ...p, design_state: 'seeded', materialised_at: null })), 'fence_invalid'],
    ['a seeded service with members', edit(F, 1, (p) => ({ ...p, design_state: 'seeded', materialised_at: null, export_fence_generation: null, export_fence_state: null })), 'seeded_with_members'],
    // records
    ['records out of order', swap(F, REC, REC + 1), 'record_order'],
    ['a repeated record', [...F.slice(0, REC + 1), F[REC] as [string, JsonObject], ...F.slice(REC + 1)], 'record_order'],
    ['an unknown entity', edit(F, REC, (p) => ({ ...p, entity_name: 'ghost' })), 'unknown_entity'],
    ['an extra record key', edit(F, REC, (p) => ({ ...p, owner_id: 'x' })), 'record_invalid'],
    ['record version 0', edit(F, REC, (p) => ({ ...p, record_version: 0n })), 'record_invalid'],
    ['an empty created_via', edit(F, REC, (p) => ({ ...p, created_via: '' })), 'record_invalid'],
    ['a created_via of 129 characters', edit(F, REC, (p) => ({ ...p, created_via: 'c'.repeat(129) })), 'record_invalid'],
    ['a server-managed field', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), owner_id: 'me' } })), 'record_fields_invalid'],
    ['a missing required field', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), title: null } })), 'record_fields_invalid'],
    ['an absent required field', edit(F, REC, (p) => ({ ...p, fields: (({ title: _dropped, ...rest }) => rest)(fields(p)) })), 'record_fields_invalid'],
    ['a string in a boolean field', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), done: 'false' } })), 'record_fields_invalid'],
    ['an empty list member', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), tags: ['a', ''] } })), 'record_fields_invalid'],
    ['a list member of 257 characters', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), tags: ['m'.repeat(257)] } })), 'record_fields_invalid'],
    ['a list of 257 members', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), tags: Array.from({ length: 257 }, (_v, i) => `t${i}`) } })), 'record_fields_invalid'],
    ['a value outside allowed values', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), status: 'maybe' } })), 'record_fields_invalid'],
    ['a string in an integer field', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), count: '1' } })), 'record_fields_invalid'],
    ['a fraction in an integer field', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), count: 1.5 } })), 'record_fields_invalid'],
    ['an integer token no binary64 writes', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), confidence: 9007199254740993n } })), 'record_fields_invalid'],
    ['a repeated list member', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), tags: ['a', 'a'] } })), 'record_fields_invalid'],
    ['a naive datetime', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), due: '2026-05-01T00:00:00' } })), 'record_fields_invalid'],
    ['a non-zero offset', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), due: '2026-05-01T00:00:00+01:00' } })), 'record_fields_invalid'],
    ['an uppercase uuid field', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), ref: IDS.branchA.toUpperCase() } })), 'record_fields_invalid'],
    ['a NUL in a string', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), detail: 'a\u0000b' } })), 'record_fields_invalid'],
    ['a string over 16 KiB', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), detail: 'x'.repeat(16385) } })), 'record_fields_invalid'],
    ['a field set over 64 KiB', edit(F, REC, (p) => ({ ...p, fields: { ...fields(p), detail: 'x'.repeat(16384), title: 'y'.repeat(16384), tags: Array.from({ length: 250 }, (_v, i) => `${i}`.padEnd(200, 'z')) } })), 'record_fields_invalid'],
    // history
    ['history out of order', swap(F, HIS + 2, HIS + 3), 'history_order'],
    ['a version gap', without(F, HIS + 1), 'history_sequence'],
    ['a chain not starting with create', without(F, HIS), 'history_sequence'],
    ['a second create', edit(F, HIS + 1, (p) => ({ ...p, kind: 'create', before: null })), 'history_sequence'],
    ['create with a before', edit(F, HIS, (p) => ({ ...p, before: p['after'] as JsonObject })), 'history_invalid'],
    ['delete with an after', edit(F, HIS + 4, (p) => ({ ...p, after: p['before'] as JsonObject })), 'history_invalid'],
    ['an update without a before', edit(F, HIS + 1, (p) => ({ ...p, before: null })), 'history_invalid'],
    ['an update without an after', edit(F, HIS + 1, (p) => ({ ...p, after: null })), 'history_invalid'],
    ['an assignment without a before', edit(F, HIS + 2, (p) => ({ ...p, before: null })), 'history_invalid'],
    ['an assignment without an after', edit(F, HIS + 2, (p) => ({ ...p, after: null })), 'history_invalid'],
    ['an assignment that changes the fields', edit(F, HIS + 2, (p) => ({ ...p, after: (F[HIS] as [string, JsonObject])[1]['after'] as JsonObject })), 'history_invalid'],
    ['an unknown event kind', edit(F, HIS + 1, (p) => ({ ...p, kind: 'rename' })), 'history_invalid'],
    ['a repeated event', [...F.slice(0, HIS + 1), F[HIS] as [string, JsonObject], ...F.slice(HIS + 1)], 'history_order'],
    ['an event after a delete', [...F.slice(0, HIS + 5), ['history', { ...(F[HIS + 4]?.[1] as JsonObject), kind: 'update', record_version: 3n, after: { title: 'Back' } }], ...F.slice(HIS + 5)], 'history_sequence'],
    ['a chain starting with create at version 2', edit(F, HIS + 5, (p) => ({ ...p, record_version: 2n })), 'history_sequence'],
    ['a chain starting with an update at version 1', edit(F, HIS + 6, (p) => ({ ...p, kind: 'update', before: p['after'] as JsonObject })), 'history_sequence'],
    ['an invalid snapshot', edit(F, HIS + 1, (p) => ({ ...p, after: { title: 5n } })), 'record_fields_invalid'],
    ['a record whose last event is a delete', edit(F, HIS + 3, (p) => ({ ...p, record_id: IDS.note1 })), 'history_order'],
    ['a live record at another version', edit(F, REC, (p) => ({ ...p, record_version: 2n })), 'history_record_mismatch'],
    ['a deleted record still present', without(F, HIS + 4), 'history_record_mismatch'],
    ['a record without history', without(F, HIS + 6), 'history_record_mismatch'],
    // branches
    ['branches out of order', swap(F, BR, BR + 1), 'branch_order'],
    ['a repeated branch', [...F.slice(0, BR + 1), F[BR] as [string, JsonObject], ...F.slice(BR + 1)], 'branch_order'],
    ['a two-character slug', edit(F, BR, (p) => ({ ...p, slug: 'ab' })), 'branch_invalid'],
    ['a branch type of 81 characters', edit(F, BR, (p) => ({ ...p, branch_type: 'r'.repeat(81) })), 'branch_invalid'],
    ['a NUL in a title', edit(F, BR, (p) => ({ ...p, title: 'a\u0000b' })), 'branch_invalid'],
    ['an intent of 1001 characters', edit(F, BR, (p) => ({ ...p, intent: 'i'.repeat(1001) })), 'branch_invalid'],
    ['a retrieval summary of 1001 characters', edit(F, BR, (p) => ({ ...p, retrieval_summary: 's'.repeat(1001) })), 'branch_invalid'],
    ['branch revision 0', edit(F, BR, (p) => ({ ...p, branch_revision: 0n })), 'branch_invalid'],
    ['a missing parent', edit(F, BR + 1, (p) => ({ ...p, parent_branch_id: IDS.note1 })), 'branch_parent_missing'],
    ['a branch that is its own parent', edit(F, BR, (p) => ({ ...p, parent_branch_id: IDS.branchA })), 'branch_cycle'],
    ['two branches parenting each other', edit(F, BR, (p) => ({ ...p, parent_branch_id: IDS.branchB })), 'branch_cycle'],
    ['a bad slug', edit(F, BR, (p) => ({ ...p, slug: 'Release' })), 'branch_invalid'],
    ['a long title', edit(F, BR, (p) => ({ ...p, title: 't'.repeat(161) })), 'branch_invalid'],
    ['an unknown status', edit(F, BR, (p) => ({ ...p, status: 'closed' })), 'branch_invalid'],
    // memberships
    ['memberships out of order', swap(F, MEM, MEM + 1), 'membership_order'],
    ['both roles in one branch', [...F.slice(0, MEM + 1), ['branch_membership', { ...(F[MEM]?.[1] as JsonObject), role: 'related' }], ...F.slice(MEM + 1)], 'membership_duplicate'],
    ['a repeated membership', [...F.slice(0, MEM + 1), F[MEM] as [string, JsonObject], ...F.slice(MEM + 1)], 'membership_order'],
    ['an unknown branch', edit(F, MEM + 2, (p) => ({ ...p, branch_id: 'c0000000-0000-4000-8000-00000000000c' })), 'membership_branch_missing'],
    ['a deleted record', edit(F, MEM + 2, (p) => ({ ...p, record_id: '20000000-0000-4000-8000-000000000002' })), 'membership_record_missing'],
    ['a record of another entity', edit(F, MEM + 1, (p) => ({ ...p, entity_name: 'note' })), 'membership_record_missing'],
    ['two primaries for one record', edit(F, MEM + 2, (p) => ({ ...p, role: 'primary' })), 'membership_primary_conflict'],
    ['an unknown role', edit(F, MEM + 2, (p) => ({ ...p, role: 'owner' })), 'membership_invalid'],
    // section order
    ['a service before the header', swap(F, 0, 1), 'section_order'],
    ['a second service', [...F.slice(0, 2), F[1] as [string, JsonObject], ...F.slice(2)], 'section_order'],
    ['a record after history', [...F.slice(0, HIS + 1), F[REC] as [string, JsonObject], ...F.slice(HIS + 1)], 'section_order'],
    ['an audit line', [...F, ['audit', {}]], 'audit_present'],
    ['an unknown kind', [...F, ['note', {}]], 'unknown_kind'],
    ['no service', F.slice(0, 1), 'section_order'],
  ])('refuses %s', async (_name, frames, reason) => {
    expect(await defectOf(rawBundle(frames))).toBe(reason);
  });
});

describe('store constraints from the manifest', () => {
  // The fixture's service with a reference note.ref → person and unique
  // indexes on note.title and on (note.count, note.due).
  const constrained: Frames = edit(F, 1, (p) => ({
    ...p,
    manifest: {
      ...(p['manifest'] as JsonObject),
      relationships: [{ name: 'note_ref', from: { entity: 'note', field: 'ref' }, to: { entity: 'person', field: 'id' }, on_delete: 'restrict' }],
      indices: [
        { name: 'note_title_unique', entity: 'note', fields: ['title'], unique: true },
        { name: 'note_count_due_unique', entity: 'note', fields: ['count', 'due'], unique: true },
      ],
    },
  }));
  const note1 = fields((F[REC] as [string, JsonObject])[1]);

  it('accepts the fixture under them, NULLs being distinct in a unique index', async () => {
    expect(await defectOf(rawBundle(constrained))).toBeNull();
    // note3 shares note1's count but has no due: no conflict, as in SQL.
    expect(await defectOf(rawBundle(edit(constrained, REC + 1, (p) => ({ ...p, fields: { ...fields(p), count: note1['count'] ?? null } }))))).toBeNull();
    // Neither has a due: equal in count, both NULL in due, still no conflict.
    const dueless = edit(constrained, REC, (p) => ({ ...p, fields: { ...fields(p), due: null } }));
    expect(await defectOf(rawBundle(edit(dueless, REC + 1, (p) => ({ ...p, fields: { ...fields(p), count: note1['count'] ?? null } }))))).toBeNull();
  });

  it.each<[string, Frames, BundleDefect]>([
    ['a reference to a deleted record', edit(constrained, REC + 1, (p) => ({ ...p, fields: { ...fields(p), ref: IDS.note2 } })), 'record_reference_missing'],
    ['a reference to a record of another entity', edit(constrained, REC + 1, (p) => ({ ...p, fields: { ...fields(p), ref: IDS.note1 } })), 'record_reference_missing'],
    ['two records with one unique title', edit(constrained, REC + 1, (p) => ({ ...p, fields: { ...fields(p), title: note1['title'] ?? null } })), 'record_unique_duplicate'],
    ['two records with one unique pair', edit(constrained, REC + 1, (p) => ({ ...p, fields: { ...fields(p), count: note1['count'] ?? null, due: note1['due'] ?? null } })), 'record_unique_duplicate'],
    ['two branches with one slug', edit(F, BR + 1, (p) => ({ ...p, slug: 'release-q1' })), 'branch_slug_duplicate'],
  ])('refuses %s, which the store would refuse while staging', async (_name, frames, reason) => {
    expect(await defectOf(rawBundle(frames))).toBe(reason);
  });

  it('holds a non-unique index to nothing, and a unique one naming owner_id to its other fields', async () => {
    const indexed = (index: JsonObject): Frames => edit(F, 1, (p) => ({ ...p, manifest: { ...(p['manifest'] as JsonObject), indices: [index] } }));
    const sameTitle = (frames: Frames): Frames => edit(frames, REC + 1, (p) => ({ ...p, fields: { ...fields(p), title: note1['title'] ?? null } }));
    expect(await defectOf(rawBundle(sameTitle(indexed({ name: 'note_title', entity: 'note', fields: ['title'], unique: false }))))).toBeNull();
    // One principal owns every record, so (owner_id, title) is unique as title is.
    const byOwner = indexed({ name: 'note_owner_title_unique', entity: 'note', fields: ['owner_id', 'title'], unique: true });
    expect(await defectOf(rawBundle(byOwner))).toBeNull();
    expect(await defectOf(rawBundle(sameTitle(byOwner)))).toBe('record_unique_duplicate');
  });

  it('holds integer and list fields to their allowed values', async () => {
    const attributes = (p: JsonObject): JsonObject[] => ((p['manifest'] as { entities: JsonObject[] }).entities[0] as { attributes: JsonObject[] }).attributes;
    const allowing = edit(F, 1, (p) => {
      const manifest = p['manifest'] as { entities: JsonObject[] };
      const note = { ...(manifest.entities[0] as JsonObject), attributes: [...attributes(p), { name: 'level', type: 'integer', required: false, allowed_values: [1n, 2n] }, { name: 'labels', type: 'string_list', required: false, allowed_values: ['a', 'b'] }] };
      return { ...p, manifest: { ...manifest, entities: [note, ...manifest.entities.slice(1)] } };
    });
    const valued = (values: JsonObject): Frames => edit(allowing, REC + 1, (p) => ({ ...p, fields: { ...fields(p), ...values } }));
    expect(await defectOf(rawBundle(valued({ level: 2n, labels: ['b', 'a'] })))).toBeNull();
    expect(await defectOf(rawBundle(valued({ level: 3n })))).toBe('record_fields_invalid');
    expect(await defectOf(rawBundle(valued({ level: 0n })))).toBe('record_fields_invalid');
    expect(await defectOf(rawBundle(valued({ labels: ['a', 'c'] })))).toBe('record_fields_invalid');
  });
});

describe('reader framing', () => {
  const lines = linesOf(VECTOR_BYTES);
  const [header, service, trailer] = lines as [string, string, string];
  const secondHeader = frameLine('header', 2, (JSON.parse(header) as { payload: JsonObject }).payload);
  // The service frame with one more member, its digest computed over it: only the closed key set refuses it.
  const widened = canonicalJson({ extra: 0n, kind: 'service', ordinal: 1n, payload: (JSON.parse(service) as { payload: JsonObject }).payload });
  const widenedService = `${widened.slice(0, -1)},"sha256":"${createHash('sha256').update(widened).digest('hex')}"}`;

  it.each<[string, Buffer, BundleDefect]>([
    ['a CR before the LF', Buffer.from(`${header}\r\n${service}\n${trailer}\n`), 'carriage_return'],
    ['a byte-order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), VECTOR_BYTES]), 'byte_order_mark'],
    ['an empty line', Buffer.from(`${header}\n\n${service}\n${trailer}\n`), 'empty_line'],
    ['a byte after the trailer', Buffer.concat([VECTOR_BYTES, Buffer.from('\n')]), 'bytes_after_trailer'],
    ['a line after the trailer', Buffer.concat([VECTOR_BYTES, Buffer.from(`${header}\n`)]), 'bytes_after_trailer'],
    ['a byte without LF after the trailer', Buffer.concat([VECTOR_BYTES, Buffer.from('x')]), 'bytes_after_trailer'],
    ['no final LF', VECTOR_BYTES.subarray(0, -1), 'truncated'],
    ['no trailer', joinLines([header, service]), 'truncated'],
    ['nothing at all', Buffer.alloc(0), 'truncated'],
    ['invalid UTF-8', Buffer.concat([Buffer.from(header.slice(0, 40)), Buffer.from([0xc3, 0x28]), Buffer.from(`${header.slice(40)}\n`)]), 'invalid_utf8'],
    ['an encoded surrogate', Buffer.concat([Buffer.from(header.slice(0, 40)), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(`${header.slice(40)}\n`)]), 'invalid_utf8'],
    ['a wrong ordinal', joinLines([header, service.replace('"ordinal":1', '"ordinal":2'), trailer]), 'ordinal_mismatch'],
    ['a wrong line digest', joinLines([header, service.replace('"sha256":"3', '"sha256":"4'), trailer]), 'frame_digest_mismatch'],
    ['an uppercase digest', joinLines([header.replace(/"sha256":"([0-9a-f]{64})"/, (_m, hex: string) => `"sha256":"${hex.toUpperCase()}"`), service, trailer]), 'frame_shape'],
    ['a frame without digest', joinLines([header.replace(/,"sha256":"[0-9a-f]{64}"/, ''), service, trailer]), 'frame_shape'],
    ['a trailer with a digest', joinLines([header, service, `${trailer.slice(0, -1)},"sha256":"${'0'.repeat(64)}"}`]), 'frame_shape'],
    ['a wrong root', joinLines([header, service, trailer.replace('"root_sha256":"d', '"root_sha256":"e')]), 'root_mismatch'],
    ['a wrong byte count', joinLines([header, service, trailer.replace('992', '993')]), 'trailer_mismatch'],
    ['a wrong section count', joinLines([header, service, trailer.replace('{"count":0,"kind":"record"', '{"count":1,"kind":"record"')]), 'trailer_mismatch'],
    ['a wrong trailer ordinal', joinLines([header, service, trailer.replace('"ordinal":2', '"ordinal":3')]), 'ordinal_mismatch'],
    ['a trailer missing a section', joinLines([header, service, trailer.replace(/,\{"count":0,"kind":"audit","sha256":"[0-9a-f]{64}"\}/, '')]), 'trailer_invalid'],
    ['sections out of order', joinLines([header, service, trailer.replace('"kind":"branch",', '"kind":"history2",')]), 'trailer_invalid'],
    ['a trailer with an extra key', joinLines([header, service, trailer.replace('{"pre_trailer', '{"extra":1,"pre_trailer')]), 'trailer_invalid'],
    ['a wrong section digest with the right root and counts', joinLines([header, service, trailer.replace('"kind":"service","sha256":"b', '"kind":"service","sha256":"c')]), 'trailer_mismatch'],
    ['a second header after the service', joinLines([header, service, secondHeader, trailerLine([header, service, secondHeader])]), 'section_order'],
    ['a correctly hashed frame with an extra member', joinLines([header, widenedService, trailerLine([header, widenedService])]), 'frame_shape'],
    ['a trailer section entry with an extra key', joinLines([header, service, trailer.replace('{"count":1,"kind":"header"', '{"count":1,"extra":0,"kind":"header"')]), 'trailer_invalid'],
    ['a trailer first', joinLines([trailerLine([])]), 'section_order'],
    ['a trailer after the header only', joinLines([header, trailerLine([header])]), 'section_order'],
  ])('refuses %s', async (_name, bytes, reason) => {
    expect(await defectOf(bytes)).toBe(reason);
    expect(await defectOf(bytes, 1)).toBe(reason);
  });

  it('skips empty chunks anywhere, after the trailer too', async () => {
    async function* withEmptyChunks(): AsyncGenerator<Uint8Array> {
      const empty = new Uint8Array(0);
      yield empty;
      for await (const chunk of chunked(VECTOR_BYTES, 100)) {
        yield chunk;
        yield empty;
      }
    }
    const kinds: string[] = [];
    for await (const item of readWithLimits(withEmptyChunks(), DEFAULT_LIMITS, null)) kinds.push(item.kind);
    expect(kinds).toEqual(['header', 'service', 'end']);
  });

  // A second read is bound to the first read's root and skips each line's
  // digest, but still names a malformed digest as the frame's shape.
  it('refuses a malformed line digest on a second read as frame_shape', async () => {
    const root = (/"root_sha256":"([0-9a-f]{64})"/.exec(trailer) as RegExpExecArray)[1] as string;
    const secondRead = async (bytes: Buffer): Promise<BundleDefect | null> => {
      try {
        for await (const _item of readWithLimits(chunked(bytes), DEFAULT_LIMITS, root)) {
          // drain
        }
        return null;
      } catch (error) {
        if (error instanceof BundleInvalidError) return error.reason;
        throw error;
      }
    };
    expect(await secondRead(VECTOR_BYTES)).toBeNull();
    const upper = service.replace(/"sha256":"([0-9a-f]{64})"/, (_m, hex: string) => `"sha256":"${hex.toUpperCase()}"`);
    expect(await secondRead(joinLines([header, upper, trailer]))).toBe('frame_shape');
  });

  it('re-hashes a hand-edited line consistently: only the trailer then disagrees', async () => {
    const edited = frameLine('service', 1, { ...(JSON.parse(service) as { payload: JsonObject }).payload, domain_class: 'other' });
    expect(await defectOf(joinLines([header, edited, trailer]))).toBe('root_mismatch');
    expect(await defectOf(joinLines([header, edited, trailerLine([header, edited])]))).toBeNull();
  });
});
