// What a storage adapter provides to the conformance suites: fresh storage
// behind the ports, and a way to reopen it (as a restarted process would).
// Each backend binds the suites in a few lines (see sqlite.test.ts).

import { createHash } from 'node:crypto';
import { createApplication, type Application, type StoragePorts } from '../../src/aipcs/core/application.js';
import { storeLayoutOf } from '../../src/aipcs/core/layout.js';
import type { StorageLocator, StoreLayout } from '../../src/aipcs/core/ports.js';
import { manualClock, sequentialIds, type ManualClock } from '../../src/common/clock.js';
import { validateManifest } from '../../src/aipcs/contract/manifest/validate-manifest.js';
import type { ManifestV2 } from '../../src/aipcs/contract/manifest/types.js';
import type { JsonObject } from '../../src/common/json.js';
import { notesManifest } from '../support/manifests.js';

export interface StorageHarness {
  readonly name: string;
  /** A fresh, empty storage location with the registry migrated. */
  create(): Promise<StorageLocation>;
}

export interface StorageLocation {
  /** Opens the storage ports on this location (a new "process"). */
  open(): Promise<StoragePorts>;
  destroy(): Promise<void>;
}

export const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

export interface TestApp extends Application {
  readonly storage: StoragePorts;
  readonly clock: ManualClock;
}

let idPrefix = 1;

export function appOver(storage: StoragePorts, options: { principalId?: string; checkpoint?: (name: string) => void; clock?: ManualClock } = {}): TestApp {
  const clock = options.clock ?? manualClock(1_800_000_000_000_000n);
  const ids = sequentialIds(idPrefix++);
  const app = createApplication(storage, {
    principalId: options.principalId ?? 'agent-a',
    createdVia: 'mcp',
    nowMicros: () => {
      clock.advance(1n);
      return clock.nowMicros();
    },
    uuid: () => ids.uuid(),
    sha256,
    ...(options.checkpoint ? { checkpoint: options.checkpoint } : {}),
  });
  return { ...app, storage, clock };
}

export function manifest(document: JsonObject): ManifestV2 {
  const result = validateManifest(document);
  if (!result.ok) throw new Error(`fixture manifest is invalid: ${JSON.stringify(result.issues)}`);
  return result.manifest;
}

/** Seeds, designs and materialises the notes service `domainName` over `storage`: its id, its store's namespace and the app used. */
export async function materialisedNotes(storage: StoragePorts, domainName = 'notes'): Promise<{ serviceId: string; namespace: string; app: TestApp }> {
  const app = appOver(storage);
  const serviceId = (await app.lifecycle.seed({ domainName, domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: `s-${domainName}` }))['service_id'] as string;
  await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: `d-${domainName}` });
  const service = await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: `m-${domainName}` });
  return { serviceId, namespace: (service['storage'] as JsonObject)['namespace'] as string, app };
}

/** materialisedNotes, with the store's locator and layout as the storage ports take them. */
export async function materialisedNotesStore(storage: StoragePorts, domainName = 'notes'): Promise<{ serviceId: string; app: TestApp; locator: StorageLocator; layout: StoreLayout }> {
  const { serviceId, namespace, app } = await materialisedNotes(storage, domainName);
  return { serviceId, app, locator: { backend: storage.backend, namespace }, layout: storeLayoutOf(manifest(notesManifest())) };
}
