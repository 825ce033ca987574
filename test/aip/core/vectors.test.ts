// The spec's test vectors (section 10) byte for byte: positive vectors encode
// to the exact hex and ID and decode back to the same object; every negative
// vector is rejected with its code, given a repository holding V1 to V13.
import { describe, expect, it } from 'vitest';
import { compareMapKeys } from '../../../src/aip/core/cbor-profile.js';
import { artifactId, decodeObject, decodeWithId, encodeObject, objectId } from '../../../src/aip/core/codec.js';
import { objectFromJson, objectToJson } from '../../../src/aip/core/json-presentation.js';
import { V1_ONLY_TYPE_VERSIONS, type ArtifactV1 } from '../../../src/aip/core/objects.js';
import { FIELD_ORDER } from '../../../src/aip/core/schemas.js';
import { verifyGraph } from '../../../src/aip/core/verify-graph.js';
import { MemorySource } from '../support/memory-source.js';
import { ID, OBJECTS, VECTOR_ORDER, VECTORS, bytesToHex, hexToBytes } from '../support/vectors.js';

describe('positive vectors', () => {
  it('has all thirteen transcribed', () => {
    expect(VECTORS.positive.map((v) => v.n)).toEqual(VECTOR_ORDER);
  });

  for (const vector of VECTORS.positive) {
    const name = vector.n as keyof typeof OBJECTS;
    it(`${vector.n} ${vector.name} encodes to the exact bytes and ID`, () => {
      const encoded = encodeObject(OBJECTS[name]);
      if (!encoded.ok) throw encoded.error;
      expect(bytesToHex(encoded.value.bytes)).toBe(vector.hex);
      expect(encoded.value.id).toBe(vector.id);
      expect(encoded.value.id).toBe(ID[name]);
      const id = objectId(OBJECTS[name]);
      expect(id).toEqual({ ok: true, value: vector.id });
    });

    it(`${vector.n} ${vector.name} decodes to the same object`, () => {
      const decoded = decodeWithId(hexToBytes(vector.hex));
      if (!decoded.ok) throw decoded.error;
      expect(decoded.value.object).toEqual(OBJECTS[name]);
      expect(decoded.value.id).toBe(vector.id);
    });

    it(`${vector.n} ${vector.name} survives the JSON presentation`, () => {
      const json = objectToJson(vector.id, OBJECTS[name]);
      const back = objectFromJson(json);
      if (!back.ok) throw back.error;
      expect(back.value.id).toBe(vector.id);
      expect(bytesToHex(back.value.bytes)).toBe(vector.hex);
    });
  }

  it('streams artifact IDs without building the encoding', () => {
    expect(artifactId((OBJECTS.V2 as ArtifactV1).data.content)).toBe(ID.V2);
    expect(artifactId(new Uint8Array(0))).toBe(ID.V3);
    for (const size of [23, 24, 255, 256, 65535, 65536]) {
      const content = new Uint8Array(size).fill(7);
      const encoded = encodeObject({ type: 'artifact', version: 1, data: { kind: 'file', content } });
      if (!encoded.ok) throw encoded.error;
      expect(artifactId(content)).toBe(encoded.value.id);
    }
  });

  it('prints the root state JSON exactly as the spec shows it', () => {
    expect(objectToJson(ID.V1, OBJECTS.V1)).toBe(
      '{"id":"d3892a5bf1fef7589daf0d297b76d3a0630d2c516352ce43f758fd34ad632ef6","type":"state","version":1,"data":{"files":{},"intents":[],"parents":[],"operations":[]}}',
    );
  });

  it('orders state files shorter-first in JSON, as in the encoding', () => {
    const json = objectToJson(ID.V12, OBJECTS.V12);
    expect(json.indexOf('"z"')).toBeLessThan(json.indexOf('"hello.txt"'));
  });

  it('lists every field in canonical key order', () => {
    for (const names of Object.values(FIELD_ORDER)) {
      expect([...names].sort(compareMapKeys)).toEqual([...names]);
    }
  });
});

describe('negative vectors', () => {
  const repository = new MemorySource();
  for (const name of VECTOR_ORDER) repository.add(OBJECTS[name]);

  it('has all forty-one transcribed', () => {
    expect(VECTORS.negative).toHaveLength(41);
  });

  for (const vector of VECTORS.negative) {
    it(`${vector.n} ${vector.name} is rejected with ${vector.code}`, async () => {
      const bytes = hexToBytes(vector.hex);
      const decoded = decodeWithId(bytes);
      if (!decoded.ok) {
        expect(decoded.error.code).toBe(vector.code);
        return;
      }
      expect(vector.code.startsWith('graph.')).toBe(true);
      const source = new MemorySource();
      for (const [id, object] of repository.objects) source.addAs(id, object);
      source.addAs(decoded.value.id, decoded.value.object);
      const verdict = await verifyGraph(decoded.value.id, source);
      expect(verdict.ok).toBe(false);
      if (!verdict.ok) expect(verdict.error.code).toBe(vector.code);
    });
  }
});

describe('versions', () => {
  for (const name of ['V9', 'V13'] as const) {
    it(`a v1-only reader rejects ${name} explicitly`, () => {
      const vector = VECTORS.positive.find((v) => v.n === name);
      const decoded = decodeObject(hexToBytes(vector?.hex ?? ''), { accept: V1_ONLY_TYPE_VERSIONS });
      expect(decoded.ok).toBe(false);
      if (!decoded.ok) {
        expect(decoded.error.code).toBe('object.unsupported');
        expect(decoded.error.message).toContain('evidence version 2');
      }
    });
  }

  it('a v1-only reader still reads evidence v1', () => {
    const vector = VECTORS.positive.find((v) => v.n === 'V7');
    expect(decodeObject(hexToBytes(vector?.hex ?? ''), { accept: V1_ONLY_TYPE_VERSIONS }).ok).toBe(true);
  });
});
