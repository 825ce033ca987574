// The parsed-manifest cache of a long-lived server holds the services used
// recently, not every service it ever met: a principal with thousands of
// services (each manifest up to a megabyte) must not keep them all parsed.
// Observed through manifestOf: a cached manifest comes back as the same
// object, a re-parsed one as a new object with the same content.

import { describe, expect, it } from 'vitest';
import { MANIFEST_RULES } from '../../../src/aipcs/core/application.js';
import { LifecycleService, MAX_CACHED_MANIFEST_TEXT, MAX_CACHED_MANIFESTS } from '../../../src/aipcs/core/lifecycle.js';
import type { LifecycleDependencies } from '../../../src/aipcs/core/lifecycle.js';
import type { ServiceRow } from '../../../src/aipcs/core/ports.js';
import { stringifyExact, type JsonObject, type JsonValue } from '../../../src/common/json.js';
import { fingerprintText } from '../../../src/aipcs/core/record-rules.js';
import { manifest, sha256 } from '../../conformance/harness.js';
import { notesManifest, serverManaged } from '../../support/manifests.js';

const document = MANIFEST_RULES.toDocument(manifest(notesManifest()));

/** Only what manifestOf reads of a service row; the rest is never looked at. */
function row(index: number, schemaVersion = 1, manifestDocument: JsonValue = document): ServiceRow {
  return { serviceId: `00000000-0000-4000-8000-${index.toString().padStart(12, '0')}`, manifest: manifestDocument, schemaVersion } as ServiceRow;
}

/** A manifest near the size bound: 32 entities of 58 described fields. */
function largeManifest(): JsonObject {
  const entities = Array.from({ length: 32 }, (_, e) => ({
    name: `entity_${e}_${'n'.repeat(40)}`,
    description: 'd'.repeat(900),
    attributes: [...serverManaged(), ...Array.from({ length: 58 }, (_, a) => ({ name: `field_${a}_${'f'.repeat(40)}`, type: 'string', description: `${e} ${a} `.padEnd(300, 'x') }))],
  }));
  return { manifest_version: 2n, schema_version: 1n, entities };
}

function lifecycle(): LifecycleService {
  // manifestOf touches no storage: the ports are never called here.
  const deps: LifecycleDependencies = {
    registry: {} as LifecycleDependencies['registry'],
    stores: {} as LifecycleDependencies['stores'],
    backend: 'sqlite',
    principalId: 'agent-a',
    createdVia: 'mcp',
    manifests: MANIFEST_RULES,
    nowMicros: () => 0n as ReturnType<LifecycleDependencies['nowMicros']>,
    newServiceId: () => '00000000-0000-4000-8000-000000000001',
    sha256,
    canonical: fingerprintText,
  };
  return new LifecycleService(deps);
}

describe('the parsed-manifest cache', () => {
  it('keeps a manifest while its service is used, and parses again after a schema change', () => {
    const service = lifecycle();
    const first = service.manifestOf(row(1));
    expect(service.manifestOf(row(1))).toBe(first);
    const evolved = service.manifestOf(row(1, 2));
    expect(evolved).not.toBe(first);
    expect(evolved).toEqual(first);
  });

  it('forgets the least recently used service beyond its bound, and keeps one used meanwhile', () => {
    const service = lifecycle();
    const oldest = service.manifestOf(row(0));
    const used = service.manifestOf(row(1));
    for (let index = 2; index < MAX_CACHED_MANIFESTS; index++) service.manifestOf(row(index));
    // Full now; using service 1 again makes service 0 the least recently used.
    expect(service.manifestOf(row(1))).toBe(used);
    service.manifestOf(row(MAX_CACHED_MANIFESTS));
    expect(service.manifestOf(row(1))).toBe(used);
    const reparsed = service.manifestOf(row(0));
    expect(reparsed).not.toBe(oldest);
    expect(reparsed).toEqual(oldest);
  });

  it('also keeps no more manifest text than its bound, so large manifests leave sooner', () => {
    const service = lifecycle();
    const large = MANIFEST_RULES.toDocument(manifest(largeManifest()));
    const text = stringifyExact(large).length;
    const fit = Math.floor(MAX_CACHED_MANIFEST_TEXT / text);
    expect(fit).toBeLessThan(MAX_CACHED_MANIFESTS);
    const oldest = service.manifestOf(row(0, 1, large));
    const second = service.manifestOf(row(1, 1, large));
    // One more than the text bound holds: only the oldest goes.
    for (let index = 2; index <= fit; index++) service.manifestOf(row(index, 1, large));
    expect(service.manifestOf(row(1, 1, large))).toBe(second);
    const reparsed = service.manifestOf(row(0, 1, large));
    expect(reparsed).not.toBe(oldest);
    expect(reparsed).toEqual(oldest);
  });
});
