// The application services of one process, built over a set of storage
// ports for one principal. Pure wiring: the composition root supplies the
// ports, the clock, the id source and the hash function.

import { checkEvolution } from '../contract/manifest/evolve.js';
import { manifestFromNormalised, manifestToJson } from '../contract/manifest/validate-manifest.js';
import { BranchService } from './branches.js';
import { DiscoveryService } from './discovery.js';
import { LifecycleService, type ManifestRules } from './lifecycle.js';
import { MaintenanceService } from './maintenance.js';
import { OperatorService } from './operations.js';
import { ServiceTransfer } from './transfer.js';
import type { TransferCodec } from './transfer-codec.js';
import type { BackendName, Micros, OperatorDataPort, OperatorRegistryPort, OperatorStorePort, RegistryPort, ServiceDataPort, ServiceStorePort } from './ports.js';
import { fingerprintText } from './record-rules.js';
import { RecordService } from './records.js';
import { storeLayoutOf } from './layout.js';
import { representableClock } from './time.js';

export interface StoragePorts {
  readonly backend: BackendName;
  readonly registry: RegistryPort;
  readonly stores: ServiceStorePort;
  readonly data: ServiceDataPort;
  close(): Promise<void>;
}

/** Storage that also offers what the `aipcs` operator commands need (ports.ts, operator administration). */
export interface OperatorStoragePorts extends StoragePorts {
  readonly registry: OperatorRegistryPort;
  readonly stores: OperatorStorePort;
  readonly data: OperatorDataPort;
}

export interface ApplicationOptions {
  readonly principalId: string;
  readonly createdVia: 'mcp' | 'cli';
  nowMicros(): Micros;
  uuid(): string;
  sha256(text: string): string;
  checkpoint?(name: string): void;
}

export interface Application {
  readonly lifecycle: LifecycleService;
  readonly records: RecordService;
  readonly branches: BranchService;
  readonly discovery: DiscoveryService;
  readonly maintenance: MaintenanceService;
}

export const MANIFEST_RULES: ManifestRules = {
  toDocument: manifestToJson,
  fromDocument: manifestFromNormalised,
  isAcceptedEvolution: (current, target) => checkEvolution(current, target).ok,
};

export function createApplication(storage: StoragePorts, options: ApplicationOptions): Application {
  const nowMicros = representableClock(options.nowMicros);
  const lifecycle = new LifecycleService(
    {
      registry: storage.registry,
      stores: storage.stores,
      backend: storage.backend,
      principalId: options.principalId,
      createdVia: options.createdVia,
      manifests: MANIFEST_RULES,
      nowMicros,
      newServiceId: options.uuid,
      sha256: options.sha256,
      canonical: fingerprintText,
      ...(options.checkpoint ? { checkpoint: options.checkpoint } : {}),
    },
    // An evolve that adds a unique index over duplicate data is refused at admission.
    async (service, current, target) => {
      const check = checkEvolution(current, target);
      if (!check.ok || check.plan.addedUniqueIndicesOnExistingEntities.length === 0 || !service.storage) return true;
      const layout = storeLayoutOf(current);
      return storage.data.read(service.storage, options.principalId, async (tx) => {
        for (const index of check.plan.addedUniqueIndicesOnExistingEntities) {
          const entity = layout.entities.find((candidate) => candidate.name === index.entity);
          if (!entity) continue;
          // A field this evolve adds is null in every existing row, and rows with a null never collide.
          if (!index.fields.every((field) => entity.columns.some((column) => column.name === field))) continue;
          if (await tx.hasDuplicates(index.entity, index.fields)) return false;
        }
        return true;
      });
    },
  );
  const records = new RecordService({
    lifecycle,
    data: storage.data,
    principalId: options.principalId,
    nowMicros,
    newRecordId: options.uuid,
    sha256: options.sha256,
  });
  const branches = new BranchService({
    lifecycle,
    data: storage.data,
    principalId: options.principalId,
    nowMicros,
    newBranchId: options.uuid,
    sha256: options.sha256,
  });
  const discovery = new DiscoveryService({ lifecycle, registry: storage.registry, data: storage.data, principalId: options.principalId });
  const maintenance = new MaintenanceService({ lifecycle, data: storage.data, principalId: options.principalId, nowMicros });
  return { lifecycle, records, branches, discovery, maintenance };
}

export interface OperatorOptions extends ApplicationOptions {
  /** The artefact codec; export and import are unavailable without it. */
  readonly codec?: TransferCodec;
  readonly producer: { readonly packageVersion: string; readonly mcpContract: string };
}

export interface Operator {
  readonly application: Application;
  readonly operations: OperatorService;
  readonly transfer: ServiceTransfer | null;
}

/** The `aipcs` operator commands' services over storage that offers the operator ports. */
export function createOperator(storage: OperatorStoragePorts, options: OperatorOptions): Operator {
  const nowMicros = representableClock(options.nowMicros);
  const application = createApplication(storage, { ...options, nowMicros });
  const deps = {
    storage,
    lifecycle: application.lifecycle,
    principalId: options.principalId,
    nowMicros,
    newId: options.uuid,
    sha256: options.sha256,
    canonical: fingerprintText,
    ...(options.checkpoint ? { checkpoint: options.checkpoint } : {}),
  };
  const operations = new OperatorService(deps);
  const transfer = options.codec ? new ServiceTransfer({ ...deps, codec: options.codec, producer: options.producer }, operations.claims, application.lifecycle) : null;
  return { application, operations, transfer };
}
