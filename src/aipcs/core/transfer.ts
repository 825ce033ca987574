// Export and import of one service (operations spec §1.9.4-1.9.5, §5.9):
// claims and receipts, whole-store reads in one snapshot behind a closed
// fence, one-unit staging, re-observation and publication. Bytes go through
// the injected codec; files, spools, prompts and output belong to the CLI.

import { inUtf16Order, type JsonObject } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import type { IssueCode } from '../contract/issues.js';
import type { ManifestV2 } from '../contract/manifest/types.js';
import type { LifecycleService } from './lifecycle.js';
import { namespaceOf } from './lifecycle.js';
import { guarded, UnfinishedOperation, type OperatorClaims, type OperatorDependencies } from './operations.js';
import {
  StorageFailure,
  type ClaimRow,
  type EntityLayout,
  type FieldSet,
  type FieldValue,
  type HistoryEvent,
  type HistoryPosition,
  type MembershipRow,
  type Micros,
  type OperatorDataReader,
  type ServiceRow,
  type StorageLocator,
  type StoredBranch,
  type StoredRecord,
  type StoreLayout,
  type WriteFence,
} from './ports.js';
import { domainAttributes } from './record-rules.js';
import { formatTimestamp27 } from './time.js';
import type {
  ExportFence,
  TransferBranch,
  TransferCodec,
  TransferHistoryEvent,
  TransferMembership,
  TransferRecord,
  TransferService,
  TransferSink,
  TransferSummary,
  TextDigest,
  ValidatedTransfer,
} from './transfer-codec.js';

export interface TransferDependencies extends OperatorDependencies {
  readonly codec: TransferCodec;
  /** What the header names as the producer. */
  readonly producer: { readonly packageVersion: string; readonly mcpContract: string };
}

export interface ExportCommand {
  readonly serviceId: string;
  readonly expectedServiceRevision: bigint;
  readonly operationId: string;
}

/** The store's fence was open where the procedure requires it closed. */
class FenceOpenError extends Error {}

/**
 * The pages of a keyset-paged read. The next page is requested before the
 * current one is handed out, so a networked store answers while the caller
 * encodes; a request left behind by a consumer that stopped early is
 * observed, never an unhandled rejection. Whole pages, not items: each
 * level of async generation costs every item a few promise turns.
 */
async function* paged<T, P>(size: number, fetch: (after: P | null) => Promise<T[]>, position: (item: T) => P): AsyncGenerator<readonly T[]> {
  let pending = fetch(null);
  for (;;) {
    const page = await pending;
    const last = page.at(-1);
    const more = page.length >= size && last !== undefined;
    if (more) {
      pending = fetch(position(last));
      pending.catch(() => undefined);
    }
    yield page;
    if (!more) return;
  }
}

/**
 * Field text a staging batch may gather before it is written: a count alone
 * let 500 records of 64 KiB (and their copies on the way to the store) make
 * each batch tens of megabytes.
 */
const STAGE_BATCH_CHARS = 4 * 1024 * 1024;

/** Members gathered for one staging write: full at `maxItems`, or at `maxChars` of their field text. */
export class StageBatch<T> {
  private items: T[] = [];
  private chars = 0;

  constructor(
    private readonly maxItems: number,
    private readonly maxChars = STAGE_BATCH_CHARS,
  ) {}

  /** Adds `item`, which carries `chars` of field text; true when the batch is now full. */
  add(item: T, chars = 0): boolean {
    this.items.push(item);
    this.chars += chars;
    return this.items.length >= this.maxItems || this.chars >= this.maxChars;
  }

  /** The members gathered, leaving the batch empty. */
  take(): T[] {
    const items = this.items;
    this.items = [];
    this.chars = 0;
    return items;
  }
}

/** Roughly the text a field set carries (its strings and list members; 8 for any other value). */
function fieldSetChars(fields: FieldSet | null): number {
  if (fields === null) return 0;
  let chars = 0;
  for (const value of Object.values(fields)) {
    if (typeof value === 'string') chars += value.length;
    else if (Array.isArray(value)) for (const member of value as readonly string[]) chars += member.length + 1;
    else chars += 8;
  }
  return chars;
}

function byName(a: EntityLayout, b: EntityLayout): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * A completed export claim's result, when its receipt names the bytes this
 * run wrote (`writtenRoot`); otherwise the run is told its outcome is
 * uncertain, and the repetition replays the receipt's own bytes.
 */
function completedFor(result: JsonObject, writtenRoot: string | null): JsonObject {
  if (writtenRoot === null || (result['receipt'] as JsonObject | undefined)?.['bundle_root_sha256'] !== writtenRoot) throw new AipcsError('operation_uncertain_lifecycle');
  return result;
}

function transferService(service: ServiceRow, fence: WriteFence | null): TransferService {
  return {
    serviceId: service.serviceId,
    domainName: service.domainName,
    domainClass: service.domainClass,
    intentDescription: service.intentDescription,
    designState: service.designState,
    operationalStatus: service.operationalStatus,
    manifest: service.manifest as JsonObject | null,
    schemaVersion: service.schemaVersion,
    serviceRevision: service.serviceRevision,
    createdAt: service.createdAt,
    updatedAt: service.updatedAt,
    lastActivityAt: service.lastActivityAt,
    materialisedAt: service.materialisedAt,
    exportFence: fence === null ? null : { generation: fence.generation, state: 'closed' },
  };
}

/** Every member of a store in canonical order, read page by page (of `size`) inside one snapshot. */
function storeMembers(tx: OperatorDataReader, layout: StoreLayout, size: number) {
  const entities = [...layout.entities].sort(byName);
  return {
    async *records(): AsyncGenerator<TransferRecord> {
      for (const entity of entities) {
        const pages = paged(
          size,
          (afterId: string | null) => tx.queryRecords(entity, { filters: [], branch: null, afterId, limit: size }),
          (record) => record.id,
        );
        for await (const page of pages) {
          for (const record of page) {
            yield {
              entityName: entity.name,
              recordId: record.id,
              recordVersion: record.recordVersion,
              createdAt: record.createdAt,
              updatedAt: record.updatedAt,
              createdVia: record.createdVia,
              fields: record.fields,
            };
          }
        }
      }
    },
    async *history(): AsyncGenerator<TransferHistoryEvent> {
      const pages = paged(
        size,
        (after: HistoryPosition | null) => tx.historyPage(after, size),
        (event: HistoryEvent): HistoryPosition => ({ entityName: event.entityName, recordId: event.recordId, recordVersion: event.recordVersion }),
      );
      for await (const page of pages) {
        for (const event of page) {
          yield { entityName: event.entityName, recordId: event.recordId, recordVersion: event.recordVersion, kind: event.kind, occurredAt: event.occurredAt, before: event.before, after: event.after };
        }
      }
    },
    async *branches(): AsyncGenerator<TransferBranch> {
      const pages = paged(
        size,
        (afterId: string | null) => tx.listBranches({ status: null, branchType: null, parentId: null, afterId, limit: size }),
        (branch) => branch.id,
      );
      for await (const page of pages) {
        for (const branch of page) {
          yield {
            branchId: branch.id,
            slug: branch.slug,
            title: branch.title,
            intent: branch.intent,
            branchType: branch.branchType,
            parentBranchId: branch.parentId,
            status: branch.status,
            retrievalSummary: branch.retrievalSummary,
            createdAt: branch.createdAt,
            updatedAt: branch.updatedAt,
            branchRevision: branch.branchRevision,
          };
        }
      }
    },
    async *memberships(): AsyncGenerator<TransferMembership> {
      for await (const page of paged(
        size,
        (after: MembershipRow | null) => tx.membershipPage(after, size),
        (row) => row,
      )) {
        yield* page;
      }
    },
  };
}

/**
 * An injective text of a member for the content digest: type-tagged
 * scalars, strings as JSON string literals (no raw newline), object keys
 * sorted. Cheaper than a general canonical rendering; it only has to be the
 * same on both sides of a staging, never parsed.
 */
export function digestText(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'bigint':
      return `i${value.toString()}`;
    case 'number':
      return `d${Object.is(value, -0) ? '-0' : String(value)}`;
    case 'boolean':
      return value ? 't' : 'f';
    default:
      break;
  }
  if (value === null || value === undefined) return 'n';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + digestText(value[i]);
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  let out = '{';
  let first = true;
  for (const key of inUtf16Order(Object.keys(record))) {
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + digestText(record[key]);
    first = false;
  }
  return out + '}';
}

/**
 * A running digest of member content, the same for an artefact and for the
 * store it was staged into: record field sets are completed with nulls (an
 * artefact may omit them, a store row has every column) and taken in the
 * manifest's attribute order, everything else as decoded. Used to re-observe
 * a staged store without trusting the writer. Each member is one line of
 * self-delimiting parts (JSON string literals, tagged integers, digestText
 * values; no raw newline) in a fixed order per kind, so no object is built
 * or sorted per member. The lines go to the codec's running text digest
 * (their UTF-8 bytes, hashed through a reused buffer), never joined.
 */
const fieldNamesByManifest = new WeakMap<ManifestV2, ReadonlyMap<string, readonly string[]>>();

/** The domain attribute names of each entity of a manifest, in manifest order (computed once per manifest). */
function fieldNamesOf(manifest: ManifestV2): ReadonlyMap<string, readonly string[]> {
  let names = fieldNamesByManifest.get(manifest);
  if (names === undefined) {
    names = new Map(manifest.entities.map((entity) => [entity.name, domainAttributes(entity).map((attribute) => attribute.name)]));
    fieldNamesByManifest.set(manifest, names);
  }
  return names;
}

class ContentDigest {
  /** The domain attribute names of each entity, in manifest order. */
  private readonly fieldNames: ReadonlyMap<string, readonly string[]>;

  constructor(
    private readonly hash: TextDigest,
    manifest: ManifestV2,
  ) {
    this.fieldNames = fieldNamesOf(manifest);
  }

  private push(line: string): void {
    this.hash.update(line);
  }

  record(record: { entityName: string; recordId: string; recordVersion: bigint; createdAt: Micros; updatedAt: Micros; createdVia: string; fields: FieldSet }): void {
    let line = `r${JSON.stringify(record.entityName)}${JSON.stringify(record.recordId)}i${record.recordVersion}i${record.createdAt}i${record.updatedAt}${JSON.stringify(record.createdVia)}[`;
    const fields = record.fields;
    const names = this.fieldNames.get(record.entityName) ?? [];
    for (let i = 0; i < names.length; i++) line += (i > 0 ? ',' : '') + digestText(fields[names[i] as string] ?? null);
    this.push(`${line}]\n`);
  }

  history(event: TransferHistoryEvent): void {
    this.push(
      `h${JSON.stringify(event.entityName)}${JSON.stringify(event.recordId)}i${event.recordVersion}${JSON.stringify(event.kind)}i${event.occurredAt}${digestText(event.before)}${digestText(event.after)}\n`,
    );
  }

  branch(branch: TransferBranch): void {
    this.push(`b${digestText(branch)}\n`);
  }

  membership(membership: TransferMembership): void {
    this.push(`m${digestText(membership)}\n`);
  }

  get digest(): string {
    return this.hash.digest();
  }
}

/** `import --dry-run`: what the validated artefact holds. Needs no storage; nothing is written anywhere. */
export function importDryRunResult(artefact: ValidatedTransfer, codec: TransferCodec): JsonObject {
  const service = artefact.service;
  return {
    operation: 'import_dry_run',
    summary: codec.summaryJson(artefact.summary),
    service: {
      service_id: service.serviceId,
      domain_name: service.domainName,
      domain_class: service.domainClass,
      intent_description: service.intentDescription,
      design_state: service.designState,
      operational_status: service.operationalStatus,
      schema_version: service.schemaVersion === null ? null : BigInt(service.schemaVersion),
      service_revision: service.serviceRevision,
    },
  };
}

export class ServiceTransfer {
  constructor(
    private readonly deps: TransferDependencies,
    private readonly claims: OperatorClaims,
    private readonly lifecycle: LifecycleService,
  ) {}

  private get registry() {
    return this.deps.storage.registry;
  }

  private get principalId(): string {
    return this.deps.principalId;
  }

  // -------------------------------------------------------------------------
  // export

  /**
   * Writes the artefact of one service to `sink` and completes the claim with
   * a verified receipt. The sink's bytes are the artefact only when this
   * resolves; the caller publishes them then, and discards them otherwise.
   */
  async export(command: ExportCommand, sink: TransferSink): Promise<JsonObject> {
    const fingerprint = this.claims.fingerprint('export', { service_id: command.serviceId, expected_service_revision: command.expectedServiceRevision });
    return guarded(async () => {
      await this.refuseUnencodableService(command.serviceId);
      const admitted = await this.registry.write(async (tx) => {
        const resolved = await this.claims.resolve(tx, command.operationId, 'export', fingerprint);
        if (resolved) return resolved;
        const service = await tx.getService(this.principalId, command.serviceId);
        if (!service || service.serviceRevision !== command.expectedServiceRevision) throw new AipcsError('stale_revision');
        // A materialised service is exported only behind a closed fence.
        if (service.designState === 'materialised' && service.operationalStatus === 'active') throw new AipcsError('unsupported_transition');
        await this.claims.requireNoActiveIntent(tx, service.serviceId);
        const claim = this.claims.prepared('export', command.operationId, fingerprint, service.serviceId, {
          service_id: service.serviceId,
          expected_service_revision: command.expectedServiceRevision,
        });
        await tx.insertClaim(claim);
        return { claim };
      });
      if ('replay' in admitted) return this.replayExport(admitted.replay, sink);
      this.claims.admitted(admitted.claim);
      return this.runExport(admitted.claim, sink);
    });
  }

  /**
   * Refuses, before any claim exists, a service whose own line (manifest and
   * metadata) the artefact cannot hold. The contract bounds a manifest's parts
   * but not its total, so a manifest can exceed the artefact's 1 MiB line;
   * found only while encoding, that failure froze the service as
   * recovery_required for ever (no reads, writes, resume or export). The
   * members' lines are bounded by the record bounds and always fit. A
   * manifest can also hold number allowed_values that canonical JSON cannot
   * carry apart ([1, 1.0] is written [1, 1]) or as the type they have
   * (1e17 is written as an integer beyond 2^53): refused the same way.
   */
  private async refuseUnencodableService(serviceId: string): Promise<void> {
    const service = await this.registry.read((tx) => tx.getService(this.principalId, serviceId));
    if (!service) return;
    const manifest = this.lifecycle.manifestOf(service);
    const fence = service.designState === 'materialised' && service.storage && manifest ? await this.deps.storage.stores.readFence(service.storage) : null;
    const header = { producerPackageVersion: this.deps.producer.packageVersion, producerMcpContract: this.deps.producer.mcpContract, createdAt: this.deps.nowMicros(), sourceBackend: this.deps.storage.backend };
    try {
      await this.deps.codec.write({ header, service: transferService(service, fence), records: [], history: [], branches: [], memberships: [] }, () => undefined);
    } catch (error) {
      if (!(error instanceof AipcsError && error.code === 'validation_failed')) throw error;
      // Not damage of the store: the admission that follows decides every other refusal.
      if (fence !== null && fence.state !== 'closed') return;
      const tooLong = this.deps.codec.lineTooLong(error);
      throw new AipcsError('unsupported_transition', {
        issues: [
          {
            code: tooLong ? 'invalid_length' : 'invalid_value',
            path: 'service.manifest',
            message: tooLong
              ? 'The service manifest is too large for one line of the export artefact.'
              : 'The service manifest holds values (such as numbers) the export artefact cannot carry as they are.',
            remediation: 'The service cannot be exported; its data stays usable.',
          },
        ],
      });
    }
  }

  private async runExport(claim: ClaimRow, sink: TransferSink): Promise<JsonObject> {
    const expected = (claim.intent as JsonObject)['expected_service_revision'] as bigint;
    const service = await this.registry.read((tx) => tx.getService(this.principalId, claim.serviceId ?? ''));
    if (!service || service.serviceRevision !== expected || (service.designState === 'materialised' && service.operationalStatus === 'active')) {
      // A concurrent run of this export that completed it: written again as its replay is.
      return this.replayExport(await this.claims.markRecoveryRequired(claim), sink);
    }
    const createdAt = this.deps.nowMicros();
    let encoded: { summary: TransferSummary; fence: WriteFence | null };
    try {
      encoded = await this.encode(service, createdAt, sink);
    } catch (error) {
      // A service that outgrew one artefact is neither damaged nor changed by
      // the attempt: freezing it (below) locked a working service away for
      // good. Refused like an unencodable manifest (D21), leaving no claim.
      if (this.deps.codec.exceedsLimits(error)) {
        return this.refuseUnexportable(claim, { code: 'invalid_length', path: 'service', message: 'The service is too large for one export artefact.' });
      }
      // So is a number the store holds but canonical JSON cannot carry: an
      // integral binary64 of 2^63 or more is written as an integer token
      // beyond 64 bits (1e20 as 100000000000000000000), which no reader accepts.
      if (this.deps.codec.unrepresentable(error)) {
        return this.refuseUnexportable(claim, { code: 'invalid_value', path: 'service', message: 'The service holds a number value the export artefact cannot carry.' });
      }
      // A store that is not behind a closed fence, or whose content breaks
      // the artefact's rules, cannot be exported safely by any retry.
      if (error instanceof FenceOpenError || (error instanceof AipcsError && error.code === 'validation_failed')) return this.exportRefused(claim, null);
      // A store that cannot be read (damaged, or its connection lost) or an
      // output that cannot be written: the export only read the store and no
      // receipt exists, so its claim is released. Kept prepared, it froze
      // the service (pending; resume refused as operation_in_progress) until
      // the same operation id succeeded, which a damaged store never lets it.
      await this.releaseExportClaim(claim).catch(() => undefined);
      throw error;
    }
    // Re-check fence, claim and service before the receipt makes the artefact authoritative.
    if (encoded.fence !== null && service.storage) {
      const fence = await this.deps.storage.stores.readFence(service.storage);
      if (fence.generation !== encoded.fence.generation || fence.state !== 'closed') return this.exportRefused(claim, encoded.summary.rootSha256);
    }
    const receiptId = this.deps.newId();
    const result = await this.claims.finalise(claim, async (tx, fresh) => {
      if (!fresh || fresh.serviceRevision !== service.serviceRevision || fresh.operationalStatus !== service.operationalStatus || fresh.updatedAt !== service.updatedAt) return null;
      await tx.insertReceipt({
        receiptId,
        principalId: this.principalId,
        idempotencyKey: claim.idempotencyKey,
        serviceId: fresh.serviceId,
        kind: 'export',
        bundleRootSha256: encoded.summary.rootSha256,
        exportFormatVersion: 1,
        backend: this.deps.storage.backend,
        serviceRevision: fresh.serviceRevision,
        operationalStatus: fresh.operationalStatus,
        verification: 'verified',
        createdAt,
      });
      return {
        operation: 'export',
        operation_id: claim.idempotencyKey,
        summary: this.deps.codec.summaryJson(encoded.summary),
        receipt: {
          receipt_id: receiptId,
          kind: 'export',
          service_id: fresh.serviceId,
          bundle_root_sha256: encoded.summary.rootSha256,
          export_format_version: 1n,
          backend: this.deps.storage.backend,
          service_revision: fresh.serviceRevision,
          operational_status: fresh.operationalStatus,
          verification: 'verified',
          created_at: formatTimestamp27(createdAt),
        },
      };
    });
    // Another attempt of this same command (run twice at once) completed the
    // claim first: its receipt names other bytes (another header time) than
    // the sink holds. Those must not be published under it; the repetition
    // replays the receipt's own bytes. A concurrent same-key caller is told
    // the outcome is uncertain (README, operations spec 4.2), not that
    // another operation is in progress, the answer to a new key (spec 4.1).
    return completedFor(result, encoded.summary.rootSha256);
  }

  /**
   * The service moved on under this run: recovery_required, unless a
   * concurrent run of this same command completed the claim meanwhile. Its
   * receipt then names that run's bytes; the sink holds this run's (whole,
   * or `writtenRoot` null when cut short), which must not be published under
   * it (see `completedFor`).
   */
  private async exportRefused(claim: ClaimRow, writtenRoot: string | null): Promise<JsonObject> {
    return completedFor(await this.claims.markRecoveryRequired(claim), writtenRoot);
  }

  /** Releases the export's prepared claim (it only read the store) and refuses with `issue`. */
  private async refuseUnexportable(claim: ClaimRow, issue: { code: IssueCode; path: string; message: string }): Promise<never> {
    await this.releaseExportClaim(claim);
    throw new AipcsError('unsupported_transition', { issues: [{ ...issue, remediation: 'The service cannot be exported; its data stays usable.' }] });
  }

  /** Deletes the export's claim while it is still this run's prepared one. */
  private async releaseExportClaim(claim: ClaimRow): Promise<void> {
    await this.registry.write(async (tx) => {
      const stored = await tx.getClaim(this.principalId, claim.idempotencyKey);
      if (stored?.phase === 'prepared' && stored.fingerprint === claim.fingerprint) await tx.deleteClaim(this.principalId, claim.idempotencyKey);
    });
  }

  /** A completed export replays byte-identically (header time = receipt time) while revision and status still match. */
  private async replayExport(result: JsonObject, sink: TransferSink): Promise<JsonObject> {
    const receiptId = (result['receipt'] as JsonObject | undefined)?.['receipt_id'];
    if (typeof receiptId !== 'string') throw new AipcsError('stale_revision');
    const { receipt, service } = await this.registry.read(async (tx) => {
      const found = await tx.getReceipt(receiptId);
      return { receipt: found, service: found ? await tx.getService(this.principalId, found.serviceId) : undefined };
    });
    if (!receipt || !service || service.serviceRevision !== receipt.serviceRevision || service.operationalStatus !== receipt.operationalStatus) {
      throw new AipcsError('stale_revision');
    }
    let encoded: { summary: TransferSummary };
    try {
      encoded = await this.encode(service, receipt.createdAt, sink);
    } catch (error) {
      if (error instanceof FenceOpenError) throw new AipcsError('stale_revision');
      throw error;
    }
    if (encoded.summary.rootSha256 !== receipt.bundleRootSha256) throw new AipcsError('stale_revision');
    return result;
  }

  private async encode(service: ServiceRow, createdAt: Micros, sink: TransferSink): Promise<{ summary: TransferSummary; fence: WriteFence | null }> {
    const header = { producerPackageVersion: this.deps.producer.packageVersion, producerMcpContract: this.deps.producer.mcpContract, createdAt, sourceBackend: this.deps.storage.backend };
    const manifest = this.lifecycle.manifestOf(service);
    if (service.designState !== 'materialised' || !service.storage || !manifest) {
      const summary = await this.deps.codec.write({ header, service: transferService(service, null), records: [], history: [], branches: [], memberships: [] }, sink);
      return { summary, fence: null };
    }
    const layout = this.lifecycle.layoutOf(manifest);
    return this.deps.storage.data.scan(service.storage, this.principalId, async (tx) => {
      const fence = await tx.writeFence();
      if (fence.state !== 'closed') throw new FenceOpenError();
      const members = storeMembers(tx, layout, this.deps.storage.data.transferBatching.readPage);
      const summary = await this.deps.codec.write(
        { header, service: transferService(service, fence), records: members.records(), history: members.history(), branches: members.branches(), memberships: members.memberships() },
        sink,
      );
      return { summary, fence };
    });
  }

  // -------------------------------------------------------------------------
  // import

  /** The destination locator an import of `serviceId` uses on this backend. */
  locatorFor(serviceId: string): StorageLocator {
    return { backend: this.deps.storage.backend, namespace: namespaceOf(serviceId) };
  }

  async import(operationId: string, artefact: ValidatedTransfer): Promise<JsonObject> {
    const service = artefact.service;
    const locator = this.locatorFor(service.serviceId);
    const fingerprint = this.claims.fingerprint('import', {
      service_id: service.serviceId,
      domain_name: service.domainName,
      logical_namespace: locator.namespace,
      destination_backend: locator.backend,
      bundle_root_sha256: artefact.summary.rootSha256,
    });
    return guarded(async () => {
      const admitted = await this.registry.write(async (tx) => {
        const resolved = await this.claims.resolve(tx, operationId, 'import', fingerprint);
        if (resolved) return resolved;
        // Identity collisions: live (any principal), import-prepared or tombstoned ids; live or reserved domain names.
        if (await tx.serviceIdInUse(service.serviceId)) throw new AipcsError('already_exists');
        const identity = await tx.getIdentity(service.serviceId);
        if (identity) {
          // This principal's own import of that id, unfinished: name it, so it can be repeated.
          const unfinished = identity.state === 'import_prepared' && identity.principalId === this.principalId ? await tx.getClaim(this.principalId, identity.idempotencyKey) : undefined;
          throw unfinished?.phase === 'prepared' ? new UnfinishedOperation('already_exists', unfinished) : new AipcsError('already_exists');
        }
        if ((await tx.findServiceByDomain(this.principalId, service.domainName)) || (await tx.domainReservation(this.principalId, service.domainName)) !== undefined) {
          throw new AipcsError('already_exists');
        }
        await this.claims.requireNoActiveIntent(tx, service.serviceId);
        const claim = this.claims.prepared('import', operationId, fingerprint, service.serviceId, {
          service_id: service.serviceId,
          domain_name: service.domainName,
          logical_namespace: locator.namespace,
          destination_backend: locator.backend,
          bundle_root_sha256: artefact.summary.rootSha256,
        });
        await tx.insertClaim(claim);
        await tx.putIdentity({
          serviceId: service.serviceId,
          principalId: this.principalId,
          state: 'import_prepared',
          domainName: service.domainName,
          idempotencyKey: operationId,
          lifecycleAt: claim.createdAt,
        });
        return { claim };
      });
      if ('replay' in admitted) return admitted.replay;
      this.claims.admitted(admitted.claim);
      return this.runImport(admitted.claim, artefact, locator);
    });
  }

  private async runImport(claim: ClaimRow, artefact: ValidatedTransfer, locator: StorageLocator): Promise<JsonObject> {
    const service = artefact.service;
    const manifest = artefact.manifest;
    if (service.designState === 'materialised') {
      if (!manifest || !service.exportFence) return this.claims.markRecoveryRequired(claim);
      await this.stageOrAdopt(claim, artefact, manifest, locator);
    }
    const now = this.deps.nowMicros();
    const receiptId = this.deps.newId();
    return this.claims.finalise(claim, async (tx, existing) => {
      // The domain may have been taken (an MCP seed) since admission.
      if (existing || (await tx.serviceIdInUse(service.serviceId)) || (await tx.findServiceByDomain(this.principalId, service.domainName))) return null;
      const row: ServiceRow = {
        serviceId: service.serviceId,
        principalId: this.principalId,
        domainName: service.domainName,
        domainClass: service.domainClass,
        intentDescription: service.intentDescription,
        createdAt: service.createdAt,
        updatedAt: service.updatedAt,
        lastActivityAt: service.lastActivityAt,
        manifest: service.manifest,
        schemaVersion: service.schemaVersion,
        designState: service.designState,
        operationalStatus: service.operationalStatus,
        serviceRevision: service.serviceRevision,
        materialisedAt: service.materialisedAt,
        storage: service.designState === 'materialised' ? locator : null,
      };
      await tx.insertService(row);
      await tx.deleteIdentity(service.serviceId);
      await tx.insertReceipt({
        receiptId,
        principalId: this.principalId,
        idempotencyKey: claim.idempotencyKey,
        serviceId: service.serviceId,
        kind: 'import',
        bundleRootSha256: artefact.summary.rootSha256,
        exportFormatVersion: 1,
        backend: locator.backend,
        serviceRevision: service.serviceRevision,
        operationalStatus: service.operationalStatus,
        verification: 'verified',
        createdAt: now,
      });
      return {
        operation: 'import',
        operation_id: claim.idempotencyKey,
        summary: this.deps.codec.summaryJson(artefact.summary),
        service: this.lifecycle.project(row, 'clear'),
      };
    });
  }

  /**
   * Stages the store (one unit: layout, fence, every member), or adopts one
   * an earlier attempt of this claim staged; then re-observes it through a
   * fresh snapshot. Different content → recovery_required; a mismatch right
   * after staging → operation_uncertain (the claim stays prepared).
   */
  private async stageOrAdopt(claim: ClaimRow, artefact: ValidatedTransfer, manifest: ManifestV2, locator: StorageLocator): Promise<void> {
    const layout = this.lifecycle.layoutOf(manifest);
    const fence = artefact.service.exportFence as ExportFence;
    const state = await this.deps.storage.stores.inspect(locator);
    if (state.status === 'unavailable') throw new StorageFailure(state.reason === 'busy' ? 'busy' : 'unavailable');
    let expected: string;
    if (state.status === 'uninitialised') {
      try {
        expected = await this.stage(artefact, manifest, layout, fence, locator);
      } catch (error) {
        // Another attempt of this claim (the same command run twice at once)
        // staged the store first: adopt it as a later retry would, instead
        // of failing a command whose repetition succeeds.
        if (!(error instanceof StorageFailure && error.kind === 'incompatible') || (await this.deps.storage.stores.inspect(locator)).status !== 'ready') throw error;
        return this.adoptStaged(claim, artefact, manifest, layout, fence, locator);
      }
    } else if (state.status === 'ready') {
      return this.adoptStaged(claim, artefact, manifest, layout, fence, locator);
    } else {
      // Returns only when a concurrent run of this import completed it.
      await this.claims.markRecoveryRequired(claim);
      return;
    }
    const found = await this.storeDigest(locator, manifest, layout);
    if (found === null || found.digest !== expected || found.fence.generation !== fence.generation || found.fence.state !== 'closed') {
      throw new StorageFailure('uncertain');
    }
  }

  /** Accepts a store an earlier or concurrent attempt of this claim staged when it holds exactly the artefact; a different one → recovery_required, an unreadable one → uncertain. */
  private async adoptStaged(claim: ClaimRow, artefact: ValidatedTransfer, manifest: ManifestV2, layout: StoreLayout, fence: WriteFence, locator: StorageLocator): Promise<void> {
    const expected = await this.artefactDigest(artefact, manifest);
    const found = await this.storeDigest(locator, manifest, layout);
    if (found === null || found.digest !== expected || found.fence.generation !== fence.generation || found.fence.state !== 'closed') {
      // Returns only when a concurrent run of this import completed it; finalising then replays its result.
      await this.claims.markRecoveryRequired(claim);
    }
  }

  private completeFields(manifest: ManifestV2, entityName: string, fields: FieldSet): FieldSet {
    const out: Record<string, FieldValue> = {};
    for (const name of fieldNamesOf(manifest).get(entityName) ?? []) out[name] = fields[name] ?? null;
    return out;
  }

  /**
   * Writes the store; returns the digest of what it staged. Members go to
   * the store in batches of the backend's stageBatch (and of at most
   * STAGE_BATCH_CHARS of field text) as the replay reads them, so memory does
   * not grow with the service: history is held aside in the unit and
   * appended in time order by the store at the end.
   */
  private async stage(artefact: ValidatedTransfer, manifest: ManifestV2, layout: StoreLayout, fence: WriteFence, locator: StorageLocator): Promise<string> {
    const digest = new ContentDigest(this.deps.codec.textDigest(), manifest);
    const entities = new Map(layout.entities.map((entity) => [entity.name, entity]));
    const assignedAt = this.deps.nowMicros();
    const stageBatch = this.deps.storage.data.transferBatching.stageBatch;
    await this.deps.storage.data.stage(locator, this.principalId, layout, async (tx) => {
      await tx.setFence(fence);
      let recordEntity: EntityLayout | null = null;
      const records = new StageBatch<StoredRecord>(stageBatch);
      const history = new StageBatch<HistoryEvent>(stageBatch);
      const branches = new StageBatch<StoredBranch>(stageBatch);
      const memberships = new StageBatch<MembershipRow>(stageBatch);
      // One batch write in flight while the next batch is read and checked
      // (a networked store works meanwhile); writes stay in order, and the
      // first failure stops the unit at the next submission or at the end.
      let inFlight: Promise<void> = Promise.resolve();
      const submit = async (write: () => Promise<void>) => {
        await inFlight;
        inFlight = write();
        inFlight.catch(() => undefined);
      };
      const flushRecords = async () => {
        const entity = recordEntity;
        const batch = records.take();
        if (entity !== null && batch.length > 0) await submit(() => tx.insertRecords(entity, batch));
      };
      const flushHistory = async () => {
        const batch = history.take();
        if (batch.length > 0) await submit(() => tx.holdHistory(batch));
      };
      const flushBranches = async () => {
        const batch = branches.take();
        if (batch.length > 0) await submit(() => tx.insertBranches(batch));
      };
      const flushMemberships = async () => {
        const batch = memberships.take();
        if (batch.length > 0) await submit(() => tx.putMemberships(batch, assignedAt));
      };
      await artefact.replay({
        record: async (record) => {
          const entity = entities.get(record.entityName);
          if (!entity) throw new AipcsError('validation_failed');
          const fields = this.completeFields(manifest, record.entityName, record.fields);
          digest.record(record);
          if (entity !== recordEntity) {
            await flushRecords();
            recordEntity = entity;
          }
          const stored = { id: record.recordId, createdAt: record.createdAt, updatedAt: record.updatedAt, createdVia: record.createdVia, recordVersion: record.recordVersion, fields };
          if (records.add(stored, fieldSetChars(fields))) await flushRecords();
        },
        history: async (event) => {
          await flushRecords();
          digest.history(event);
          if (history.add(event, fieldSetChars(event.before) + fieldSetChars(event.after))) await flushHistory();
        },
        branch: async (branch) => {
          await flushHistory();
          digest.branch(branch);
          const full = branches.add({
            id: branch.branchId,
            slug: branch.slug,
            title: branch.title,
            intent: branch.intent,
            branchType: branch.branchType,
            parentId: branch.parentBranchId,
            status: branch.status,
            retrievalSummary: branch.retrievalSummary,
            createdAt: branch.createdAt,
            updatedAt: branch.updatedAt,
            branchRevision: branch.branchRevision,
          });
          if (full) await flushBranches();
        },
        membership: async (membership) => {
          await flushBranches();
          digest.membership(membership);
          if (memberships.add(membership)) await flushMemberships();
        },
      });
      // Sections come in order; each is flushed when the next begins, and the last one here.
      await flushRecords();
      await flushHistory();
      await flushBranches();
      await flushMemberships();
      await inFlight;
      // The history tool lists an entity's events in insertion order; the
      // artefact orders them by record, so the store appends them by time.
      await tx.appendHeldHistory();
    });
    return digest.digest;
  }

  /** The content digest of an artefact (a validating pass over the same bytes). */
  private async artefactDigest(artefact: ValidatedTransfer, manifest: ManifestV2): Promise<string> {
    const digest = new ContentDigest(this.deps.codec.textDigest(), manifest);
    await artefact.replay({
      record: (record) => digest.record(record),
      history: (event) => digest.history(event),
      branch: (branch) => digest.branch(branch),
      membership: (membership) => digest.membership(membership),
    });
    return digest.digest;
  }

  /** The content digest and fence of a staged store, through a fresh snapshot; null when it cannot be read as that layout. */
  private async storeDigest(locator: StorageLocator, manifest: ManifestV2, layout: StoreLayout): Promise<{ digest: string; fence: WriteFence } | null> {
    const observation = await this.deps.storage.stores.observe(locator, layout);
    // A store that could not be read is not a different one: the claim stays
    // prepared for the same key (ops spec §4.2: an unavailable observation
    // after a physical action is operation_uncertain, never terminal).
    if (observation.state === 'unavailable') throw new StorageFailure('uncertain');
    if (observation.state !== 'ready') return null;
    return this.deps.storage.data.scan(locator, this.principalId, async (tx) => {
      const digest = new ContentDigest(this.deps.codec.textDigest(), manifest);
      const members = storeMembers(tx, layout, this.deps.storage.data.transferBatching.readPage);
      for await (const record of members.records()) digest.record(record);
      for await (const event of members.history()) digest.history(event);
      for await (const branch of members.branches()) digest.branch(branch);
      for await (const membership of members.memberships()) digest.membership(membership);
      return { digest: digest.digest, fence: await tx.writeFence() };
    });
  }
}
