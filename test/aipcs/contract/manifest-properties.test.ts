// Property tests: random valid manifests validate and derive stably; random
// mutations of them never crash the validator or the request parser.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../src/common/json.js';
import { deriveModel } from '../../../src/aipcs/contract/manifest/derived-model.js';
import { ATTRIBUTE_TYPES, SERVER_MANAGED_FIELDS, type AttributeType } from '../../../src/aipcs/contract/manifest/types.js';
import { manifestToJson, validateManifest } from '../../../src/aipcs/contract/manifest/validate-manifest.js';
import { parseToolRequest } from '../../../src/aipcs/contract/requests/parse-request.js';
import { clone } from './fixtures.js';

const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/).map((base) => (base.startsWith('sqlite') ? `x${base}` : base));
const padding = fc.constantFrom('', ' ', '\t', '\u00a0', '\n ');
const padded = (text: string) => fc.tuple(padding, padding).map(([left, right]) => `${left}${text}${right}`);
const prose = (max: number) => fc.string({ minLength: 1, maxLength: max }).filter((text) => text.trim().length > 0 && !/^\p{White_Space}|\p{White_Space}$/u.test(text));

interface AttributeSeed {
  readonly type: AttributeType;
  readonly required: boolean;
  readonly description: string | null;
  readonly mode: boolean;
  readonly allowed: JsonValue[] | null;
}

function allowedFor(type: AttributeType): fc.Arbitrary<JsonValue[] | null> {
  const none = fc.constant(null);
  switch (type) {
    case 'string':
    case 'string_list':
      return fc.oneof(none, fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,12}$/), { minLength: 1, maxLength: 5 }));
    case 'integer':
      return fc.oneof(none, fc.uniqueArray(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { minLength: 1, maxLength: 5 }));
    case 'number':
      return fc.oneof(
        none,
        fc
          .tuple(fc.uniqueArray(fc.bigInt({ min: -(2n ** 53n), max: 2n ** 53n }), { maxLength: 3 }), fc.uniqueArray(fc.double({ noNaN: true, noDefaultInfinity: true }), { maxLength: 3, comparator: (a, b) => String(a) === String(b) }))
          .map(([ints, floats]) => [...ints, ...floats])
          .filter((items) => items.length > 0),
      );
    case 'boolean':
      return fc.oneof(none, fc.constantFrom<JsonValue[]>([true], [false], [true, false]));
    default:
      return none;
  }
}

// One record arbitrary per type, built once: building arbitraries per sample is slow.
const attributeSeed: fc.Arbitrary<AttributeSeed> = fc.oneof(
  ...ATTRIBUTE_TYPES.map((type) =>
    fc.record({
      type: fc.constant(type),
      required: fc.boolean(),
      description: fc.option(prose(500), { nil: null }),
      mode: fc.boolean(),
      allowed: allowedFor(type),
    }),
  ),
);

const entitySeed = fc.record({
  name,
  description: fc.option(prose(200), { nil: null }),
  attributes: fc.array(attributeSeed, { maxLength: 10 }),
  serverFirst: fc.boolean(),
});

const manifestSeed = fc.record({
  entities: fc.array(entitySeed, { minLength: 1, maxLength: 5 }),
  relationshipPicks: fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { maxLength: 6 }),
  indexPicks: fc.array(fc.tuple(fc.nat(), fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), fc.boolean()), { maxLength: 5 }),
  facetPicks: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 6 }),
  queryPatterns: fc.array(prose(240), { maxLength: 4 }),
  guidance: fc.option(prose(300), { nil: null }),
  schemaVersion: fc.integer({ min: 1, max: 6 }),
  padNames: fc.boolean(),
});

type Seed = typeof manifestSeed extends fc.Arbitrary<infer T> ? T : never;

/** Builds a manifest that is valid by construction from random choices. */
function build(seed: Seed, pads: string[]): JsonObject {
  let padIndex = 0;
  const pad = (text: string): string => (seed.padNames ? `${pads[padIndex++ % pads.length] ?? ''}${text}` : text);
  const entityNames = seed.entities.map((entity, i) => `${entity.name}_e${i}`);
  const fields: { name: string; type: AttributeType; required: boolean }[][] = [];
  const entities = seed.entities.map((entity, i) => {
    const domain = entity.attributes.map((attribute, j) => {
      const fieldName = `f${j}_${attribute.type}`;
      const mode = attribute.mode ? (attribute.type === 'string' ? 'annotation' : attribute.type === 'string_list' ? 'membership' : null) : null;
      return { name: fieldName, type: attribute.type, required: attribute.required, description: attribute.description, allowed_values: attribute.allowed, retrieval_mode: mode };
    });
    fields.push(domain.map((field) => ({ name: field.name, type: field.type, required: field.required })));
    const managed = SERVER_MANAGED_FIELDS.map((field) => ({ name: field.name, type: field.type, required: true, primary_key: field.primary_key }));
    const attributes = (entity.serverFirst ? [...managed, ...domain] : [...domain, ...managed]).map((attribute) => ({ ...attribute, name: pad(attribute.name) }));
    return { name: pad(entityNames[i] as string), description: entity.description, attributes } as JsonObject;
  });

  // Relationships from uuid fields; a required one only points to an earlier entity, keeping required edges acyclic.
  const relationships: JsonObject[] = [];
  const usedSources = new Set<string>();
  seed.relationshipPicks.forEach(([source, field, target], k) => {
    const s = source % entityNames.length;
    const uuids = (fields[s] ?? []).filter((candidate) => candidate.type === 'uuid');
    const chosen = uuids[field % Math.max(uuids.length, 1)];
    const t = target % entityNames.length;
    if (!chosen || usedSources.has(`${s}.${chosen.name}`) || (chosen.required && t >= s)) return;
    usedSources.add(`${s}.${chosen.name}`);
    relationships.push({
      name: `rel_${k}`,
      from: { entity: entityNames[s] as string, field: chosen.name },
      to: { entity: entityNames[t] as string, field: 'id' },
      on_delete: 'restrict',
    });
  });

  const indices: JsonObject[] = [];
  const definitions = new Set<string>();
  seed.indexPicks.forEach(([entityPick, fieldPicks, unique], k) => {
    const e = entityPick % entityNames.length;
    const candidates = [...SERVER_MANAGED_FIELDS.map((field) => field.name), ...(fields[e] ?? []).filter((field) => field.type !== 'string_list').map((field) => field.name)];
    const chosen = [...new Set(fieldPicks.map((pick) => candidates[pick % candidates.length] as string))];
    const key = JSON.stringify([e, chosen, unique]);
    if (definitions.has(key)) return;
    definitions.add(key);
    indices.push({ name: `idx_${k}`, entity: entityNames[e] as string, fields: chosen, unique });
  });

  const facets: JsonObject[] = [];
  const facetKeys = new Set<string>();
  seed.facetPicks.forEach(([entityPick, fieldPick]) => {
    const e = entityPick % entityNames.length;
    const candidates = [...SERVER_MANAGED_FIELDS.map((field) => field.name), ...(fields[e] ?? []).map((field) => field.name)];
    const field = candidates[fieldPick % candidates.length] as string;
    if (facetKeys.has(`${e}.${field}`)) return;
    facetKeys.add(`${e}.${field}`);
    facets.push({ entity: entityNames[e] as string, field });
  });

  const history = Array.from({ length: seed.schemaVersion - 1 }, (_, i) => ({
    from_schema_version: BigInt(i + 1),
    to_schema_version: BigInt(i + 2),
    operations: [`change ${i + 1}`],
  }));
  return {
    manifest_version: 2n,
    schema_version: BigInt(seed.schemaVersion),
    entities,
    relationships,
    indices,
    query_patterns: seed.queryPatterns,
    discovery_facets: facets,
    retrieval_guidance: seed.guidance,
    migration_history: history,
  };
}

const validManifest = fc.tuple(manifestSeed, fc.array(padded(''), { minLength: 1, maxLength: 4 })).map(([seed, pads]) => build(seed, pads));

describe('manifest properties', () => {
  it('accepts every generated valid manifest and derives a stable model', () => {
    fc.assert(
      fc.property(validManifest, (document) => {
        const first = validateManifest(document);
        if (!first.ok) throw new Error(JSON.stringify(first.issues));
        const echo = manifestToJson(first.manifest);
        const second = validateManifest(echo);
        expect(second.ok).toBe(true);
        if (!second.ok) return;
        // Validation is idempotent on its own output, and derivation is a pure function of it.
        expect(second.manifest).toEqual(first.manifest);
        expect(manifestToJson(second.manifest)).toEqual(echo);
        expect(deriveModel(second.manifest)).toEqual(deriveModel(first.manifest));
        expect(deriveModel(first.manifest)).toEqual(deriveModel(first.manifest));
      }),
      { numRuns: 300 },
    );
  });

  const losslessValue: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.constant(null),
      fc.boolean(),
      fc.string({ maxLength: 20 }),
      fc.constantFrom('string', 'uuid', 'id', 'restrict', 'membership', 'annotation', 'sqlite_x', '', ' ', 'tools', '\ud800'),
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 4 }),
    ),
  })).value;

  type Mutation = { readonly at: number; readonly op: number; readonly value: JsonValue; readonly key: string };
  const mutation: fc.Arbitrary<Mutation> = fc.record({ at: fc.nat(), op: fc.nat({ max: 5 }), value: losslessValue, key: fc.string({ maxLength: 12 }) });

  function containers(root: JsonValue): (JsonObject | JsonValue[])[] {
    const out: (JsonObject | JsonValue[])[] = [];
    const stack: JsonValue[] = [root];
    while (stack.length > 0) {
      const node = stack.pop() as JsonValue;
      if (Array.isArray(node)) {
        out.push(node);
        stack.push(...node);
      } else if (node !== null && typeof node === 'object') {
        out.push(node);
        stack.push(...Object.values(node));
      }
    }
    return out;
  }

  function mutate(document: JsonObject, mutations: readonly Mutation[]): JsonObject {
    const copy = clone(document);
    for (const { at, op, value, key } of mutations) {
      const all = containers(copy);
      const target = all[at % all.length] as JsonObject | JsonValue[];
      if (Array.isArray(target)) {
        const i = target.length === 0 ? 0 : at % target.length;
        if (op === 0) target.splice(i, 1);
        else if (op === 1) target.push(value);
        else if (op === 2 && target.length > 0) target.push(clone(target[i] as JsonValue));
        else target[i] = value;
      } else {
        const keys = Object.keys(target);
        const existing = keys[at % Math.max(keys.length, 1)];
        if (op === 0 && existing !== undefined) delete target[existing];
        else if (op === 1) Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
        else if (existing !== undefined) target[existing] = value;
      }
    }
    return copy;
  }

  it('never crashes on mutated manifests, and whatever it accepts round-trips', () => {
    fc.assert(
      fc.property(validManifest, fc.array(mutation, { minLength: 1, maxLength: 4 }), (document, mutations) => {
        const mutated = mutate(document, mutations);
        const result = validateManifest(mutated, { path: ['schema'] });
        if (result.ok) {
          expect(validateManifest(manifestToJson(result.manifest)).ok).toBe(true);
          deriveModel(result.manifest);
        } else {
          expect(result.issues.length).toBeGreaterThan(0);
          expect(result.issues.length).toBeLessThanOrEqual(32);
          for (const issue of result.issues) {
            expect(issue.path.startsWith('schema')).toBe(true);
            expect(issue.path.length).toBeLessThanOrEqual(240);
          }
        }
        const request = parseToolRequest('aipcs_service_evolve', {
          service_id: '11111111-2222-4333-8444-555555555555',
          expected_service_revision: 3n,
          expected_schema_version: 1n,
          idempotency_key: 'k',
          schema: mutated,
        });
        if (!request.ok) expect(['validation_failed', 'retired_field', 'legacy_import_required', 'manifest_version_unsupported']).toContain(request.error.code);
      }),
      { numRuns: 300 },
    );
  });

  it('never crashes on arbitrary values in place of a manifest', () => {
    fc.assert(
      fc.property(losslessValue, (value) => {
        const result = validateManifest(value);
        expect(result.ok).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
