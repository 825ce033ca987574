// The administration commands of `aipcs` (operations spec §1.8-1.9): each is
// a flag check (pure, before anything else) and a run over the admin
// composition. Order: transport preflight → flags and mode → configuration →
// composition → storage. Prompts go to the terminal, results to output.ts.

import { randomUUID } from 'node:crypto';
import { closeSync, fstatSync } from 'node:fs';
import { markFloats, type JsonObject } from '../../common/json.js';
import { MAINTENANCE_SCAN_TYPES } from '../contract/manifest/derived-model.js';
import { doctorReport, migrationStateObject, serviceStoreState, statusReport, type AdminContext } from '../core/admin-reports.js';
import type { Operator } from '../core/application.js';
import { TRANSITIONS, type PurgeAuthority, type TransitionKind } from '../core/operations.js';
import { importDryRunResult } from '../core/transfer.js';
import { requireRunnable, resolveConfiguration, transportPreflight, type ResolveInput, type RuntimeConfig } from '../config/index.js';
import { checkAdminComposition, loggerFor, openStorageForAdmin, reportAdminFailure, TRANSFER_CODEC, type AdminComposition } from '../compose.js';
import { describeFileFailure, storageFailureIn } from '../storage/failure-reason.js';
import { AdminRefusal, adminError, adminErrorFrom, invalidArgument, refusal } from './admin-errors.js';
import { checkFilePath, checkLimit, checkOptionalUuid, checkRevision, checkUuid, isInteractive, missingFlag, type Checked } from './admin-flags.js';
import { ArtefactSpool, ExportFile, fileChunks, INPUT_UNAVAILABLE, openArtefact, requireAbsent } from './artefact-files.js';
import { renderHumanResult, type CliObject } from './human-format.js';
import type { CliOutcome, OutputFormat } from './output.js';
import { TransferProgress } from './progress.js';
import { confirmOnTerminal } from './terminal.js';

export type Options = Record<string, unknown>;

/** What the command tree hands over: parsed options, positional arguments, where it runs. */
export interface AdminInvocation {
  readonly options: Options;
  readonly serviceId?: string;
  readonly resolveInput: ResolveInput;
  readonly stdinIsTty: boolean;
  readonly stdoutIsTty: boolean;
  /** The command as typed (`aipcs service suspend`), for the log line of a failure. */
  readonly commandName: string;
}

interface AdminCommand<P> {
  /** Flag and mode checks; no storage, file or terminal access. */
  check(invocation: AdminInvocation, interactive: boolean): Checked<P>;
  run(plan: P, runtime: RuntimeConfig, interactive: boolean): Promise<JsonObject>;
}

function formatOf(options: Options): OutputFormat {
  return options['format'] === 'human' ? 'human' : 'json';
}

/** Runs one admin command end to end and returns what to print. */
export async function runAdmin<P>(command: AdminCommand<P>, invocation: AdminInvocation): Promise<CliOutcome> {
  const input = invocation.resolveInput;
  const preflight = transportPreflight(input.options, input.env);
  if (!preflight.ok) return { ok: false, error: preflight.error };
  const interactive = isInteractive({
    format: formatOf(invocation.options),
    stdinIsTty: invocation.stdinIsTty,
    stdoutIsTty: invocation.stdoutIsTty,
    yes: invocation.options['yes'] === true,
  });
  const plan = command.check(invocation, interactive);
  if (!plan.ok) return { ok: false, error: plan.error };
  const resolution = resolveConfiguration(input);
  if (!resolution.ok) return { ok: false, error: resolution.error };
  const runnable = requireRunnable(resolution.config);
  if (!runnable.ok) return { ok: false, error: runnable.error };
  let result: CliObject;
  try {
    result = markFloats(await command.run(plan.value, runnable.runtime, interactive)) as CliObject;
  } catch (error) {
    // A refusal is the command's answer; it is logged only when storage or the operator's file caused it.
    if (!(error instanceof AdminRefusal) || storageFailureIn(error) !== undefined) reportAdminFailure(runnable.runtime.logLevel, invocation.commandName, error);
    else reportFileRefusal(runnable.runtime.logLevel, invocation.commandName, error);
    return { ok: false, error: adminErrorFrom(error) };
  }
  // A result beyond the human format's bounds (a manifest with over 100
  // indexes, say) must not read as a failed operation: say what happened.
  if (formatOf(invocation.options) === 'human' && !renderHumanResult(result).ok) return { ok: false, error: NOT_RENDERABLE };
  return { ok: true, result };
}

/** The files whose failure is the operator's to fix, by the issue that names them. */
const FILE_OF_ISSUE: ReadonlyMap<string, string> = new Map([
  ['input_unavailable', 'input'],
  ['output_unavailable', 'output'],
  ['spool_unavailable', 'temporary copy'],
]);

/**
 * Why the operator's input or output file, or the import's private copy in
 * TMPDIR, failed (a full disk, a missing folder), at --log-level info as
 * storage reasons are: the issue alone lists every possible cause. Fixed
 * words, never the path (§2.9).
 */
function reportFileRefusal(level: RuntimeConfig['logLevel'], command: string, error: AdminRefusal): void {
  const issue = error.document.issues[0]?.code;
  const file = issue === undefined ? undefined : FILE_OF_ISSUE.get(issue);
  if (file === undefined) return;
  const reason = describeFileFailure(error.cause);
  loggerFor(level).info(`${command}: ${file} unavailable${reason === undefined ? '' : `: ${reason}`}`);
}

const NOT_RENDERABLE = adminError('internal_error', [
  {
    code: 'output_not_renderable',
    path: '--format',
    message: 'The command completed, but its result does not fit the human format.',
    remediation: 'Repeat the same command with --format json; an operator command with the same operation id replays its result.',
  },
]);

// ---------------------------------------------------------------------------
// Composition helpers

async function withComposition<T>(runtime: RuntimeConfig, writable: boolean, work: (composition: AdminComposition) => Promise<T>): Promise<T> {
  const composition = await openStorageForAdmin(runtime, { writable });
  try {
    return await work(composition);
  } finally {
    await composition.close();
  }
}

/** Every command but status and doctor needs a persistent profile. */
function requirePersistent(runtime: RuntimeConfig): void {
  if (runtime.profile === 'stateless') throw refusal('unsupported_operation');
}

/**
 * The registry must be exactly ready (spec §1.9.2; a not-ready one is never an
 * internal error, §9.11): storage_busy when inspection waited out its lock or
 * busy timeout (contention, ops spec §3.2.3/§3.3.1: retry), storage_unavailable
 * when inspection itself was unavailable, storage_migration_required for every
 * other status. Returns the lifecycle service.
 */
function requireReady(context: AdminContext): NonNullable<AdminContext['lifecycle']> {
  const status = context.registry?.status;
  if (status === 'ready' && context.storage && context.lifecycle) return context.lifecycle;
  if (status === 'unavailable' && context.registry?.reason === 'busy') throw refusal('storage_busy');
  if (status === undefined || status === 'unavailable' || status === 'ready') throw refusal('storage_unavailable', [], context.registry?.failure);
  // `serve` migrates an uninitialised or outdated registry, but refuses an
  // incompatible or dirty one: do not send the operator there for those.
  if (status === 'incompatible' || status === 'dirty') throw new AdminRefusal({ ...adminError('storage_migration_required'), message: REGISTRY_UNUSABLE });
  throw refusal('storage_migration_required');
}

const REGISTRY_UNUSABLE = 'The registry is incompatible or dirty and cannot be used or migrated; aipcs doctor shows its state.';

function requireOperator(composition: AdminComposition): Operator {
  requireReady(composition.context);
  if (!composition.operator) throw refusal('storage_unavailable');
  return composition.operator;
}

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });

/**
 * A lifecycle or import result shows the service re-inspected after the
 * operation (spec §1.9.3, §1.9.5): a replay of a completed operation keeps
 * its stored operation fields but shows the service as it is now.
 */
async function withCurrentService(operator: Operator, result: JsonObject, serviceId: string): Promise<JsonObject> {
  return { ...result, service: await operator.operations.inspect(serviceId) };
}

function serviceArgument(invocation: AdminInvocation): Checked<string> {
  return checkUuid(invocation.serviceId, 'SERVICE_ID');
}

// ---------------------------------------------------------------------------
// Read-only administration (§1.8)

/**
 * status, doctor and storage status report an unavailable registry as their
 * answer (spec §1.8) instead of refusing; at --log-level info the operator
 * also reads why, in the words a refused command logs.
 */
function explainUnavailableRegistry(runtime: RuntimeConfig, command: string, context: AdminContext): void {
  const failure = context.registry?.status === 'unavailable' ? context.registry.failure : undefined;
  if (failure !== undefined) reportAdminFailure(runtime.logLevel, command, failure);
}

export const statusCommand: AdminCommand<null> = {
  check: () => ok(null),
  run: (_plan, runtime) =>
    withComposition(runtime, false, (composition) => {
      explainUnavailableRegistry(runtime, 'aipcs status', composition.context);
      return statusReport(composition.context);
    }),
};

export const doctorCommand: AdminCommand<string | null> = {
  check: (invocation) => checkOptionalUuid(invocation.options['service'], '--service'),
  run: (serviceId, runtime) =>
    withComposition(runtime, false, (composition) => {
      explainUnavailableRegistry(runtime, 'aipcs doctor', composition.context);
      return doctorReport(composition.context, serviceId);
    }),
};

export const storageStatusCommand: AdminCommand<string | null> = {
  check: (invocation) => checkOptionalUuid(invocation.options['service'], '--service'),
  run: (serviceId, runtime) => {
    requirePersistent(runtime);
    return withComposition(runtime, false, async ({ context }) => {
      if (serviceId === null) {
        if (!context.backend || !context.registry) throw refusal('unsupported_operation');
        explainUnavailableRegistry(runtime, 'aipcs storage status', context);
        return migrationStateObject('registry', context.backend, context.registry);
      }
      requireReady(context);
      const storage = context.storage;
      const principalId = context.principalId;
      if (!storage || principalId === null) throw refusal('storage_unavailable');
      const service = await storage.registry.read((tx) => tx.getService(principalId, serviceId));
      if (!service) throw refusal('not_found');
      return serviceStoreState(storage, service);
    });
  },
};

export const serviceListCommand: AdminCommand<number> = {
  check: (invocation) => checkLimit(invocation.options['limit']),
  run: (limit, runtime) => {
    requirePersistent(runtime);
    return withComposition(runtime, false, async ({ context }) => {
      return requireReady(context).list(limit);
    });
  },
};

export const serviceInspectCommand: AdminCommand<string> = {
  check: serviceArgument,
  run: (serviceId, runtime) => {
    requirePersistent(runtime);
    return withComposition(runtime, false, async ({ context }) => {
      return requireReady(context).inspect(serviceId);
    });
  },
};

export const maintenanceScanCommand: AdminCommand<string> = {
  check: (invocation) => {
    if (invocation.options['service'] === undefined) return { ok: false, error: missingFlag('--service') };
    return checkUuid(invocation.options['service'], '--service');
  },
  run: (serviceId, runtime) => {
    requirePersistent(runtime);
    return withComposition(runtime, false, async (composition) => {
      const operator = requireOperator(composition);
      return operator.application.maintenance.scan({
        serviceId,
        entityName: null,
        branchId: null,
        scanTypes: [...MAINTENANCE_SCAN_TYPES],
        staleAfterDays: 90,
        lowConfidenceBelow: 0.5,
        limit: 100,
      });
    });
  },
};

// ---------------------------------------------------------------------------
// Mutating administration (§1.9)

interface Preconditions {
  readonly serviceId: string;
  readonly expectedRevision: bigint | null;
  readonly operationId: string | null;
}

function preconditions(invocation: AdminInvocation): Checked<Preconditions> {
  const serviceId = serviceArgument(invocation);
  if (!serviceId.ok) return serviceId;
  const revision = checkRevision(invocation.options['expectedRevision']);
  if (!revision.ok) return revision;
  const operationId = checkOptionalUuid(invocation.options['operationId'], '--operation-id');
  if (!operationId.ok) return operationId;
  return ok({ serviceId: serviceId.value, expectedRevision: revision.value, operationId: operationId.value });
}

/** Machine mode: the flags of §1.9.1 must all be present. */
function requireMachineFlags(invocation: AdminInvocation, plan: Preconditions, yesRequired: boolean): Checked<null> {
  if (plan.expectedRevision === null) return { ok: false, error: missingFlag('--expected-revision') };
  if (plan.operationId === null) return { ok: false, error: missingFlag('--operation-id') };
  if (yesRequired && invocation.options['yes'] !== true) return { ok: false, error: missingFlag('--yes') };
  return ok(null);
}

/** Interactive mode reads the current revision and generates an operation id where they were omitted. */
async function completeInteractively(operator: Operator, plan: Preconditions) {
  const current = await operator.operations.current(plan.serviceId);
  return {
    current,
    expectedRevision: plan.expectedRevision ?? current.serviceRevision,
    operationId: plan.operationId ?? randomUUID(),
    generated: plan.expectedRevision === null || plan.operationId === null,
    generatedOperationId: plan.operationId === null,
  };
}

export function transitionCommand(kind: TransitionKind): AdminCommand<Preconditions> {
  return {
    check(invocation, interactive) {
      const plan = preconditions(invocation);
      if (!plan.ok || interactive) return plan;
      const machine = requireMachineFlags(invocation, plan.value, kind === 'archive');
      return machine.ok ? plan : machine;
    },
    run(plan, runtime, interactive) {
      requirePersistent(runtime);
      return withComposition(runtime, true, async (composition) => {
        const operator = requireOperator(composition);
        let expectedRevision = plan.expectedRevision;
        let operationId = plan.operationId;
        if (interactive) {
          const filled = await completeInteractively(operator, plan);
          expectedRevision = filled.expectedRevision;
          operationId = filled.operationId;
          // A fresh operation (its id generated, so no replay) from a status
          // the transition does not leave is refused before any prompt.
          if (filled.generatedOperationId && !TRANSITIONS[kind].from.includes(filled.current.operationalStatus)) throw refusal('unsupported_transition');
          if (kind === 'archive' || filled.generated) {
            await confirmOnTerminal({
              title: `aipcs service ${kind}`,
              fields: [
                ['service_id', plan.serviceId],
                ['transition', `${filled.current.operationalStatus} -> ${TRANSITIONS[kind].to}`],
                ['expected_revision', expectedRevision.toString()],
                ['operation_id', operationId],
              ],
              generatedOperationId: filled.generatedOperationId,
            });
          }
        }
        const result = await operator.operations.transition({
          kind,
          serviceId: plan.serviceId,
          expectedServiceRevision: expectedRevision as bigint,
          operationId: operationId as string,
        });
        return withCurrentService(operator, result, plan.serviceId);
      });
    },
  };
}

interface ExportPlan extends Preconditions {
  readonly output: string;
  /** Progress lines on stderr (`--format human`). */
  readonly progress: boolean;
}

const toStderr = (line: string): void => {
  process.stderr.write(line);
};

export const exportCommand: AdminCommand<ExportPlan> = {
  check(invocation, interactive) {
    const plan = preconditions(invocation);
    if (!plan.ok) return plan;
    const output = checkFilePath(invocation.options['output'], '--output');
    if (!output.ok) return output;
    if (!interactive) {
      const machine = requireMachineFlags(invocation, plan.value, false);
      if (!machine.ok) return machine;
    }
    return ok({ ...plan.value, output: output.value, progress: formatOf(invocation.options) === 'human' });
  },
  run(plan, runtime, interactive) {
    requirePersistent(runtime);
    // An existing destination is refused before any registry work.
    requireAbsent(plan.output);
    return withComposition(runtime, true, async (composition) => {
      const operator = requireOperator(composition);
      const transfer = operator.transfer;
      if (!transfer) throw refusal('storage_unavailable');
      let expectedRevision = plan.expectedRevision;
      let operationId = plan.operationId;
      if (interactive) {
        const filled = await completeInteractively(operator, plan);
        expectedRevision = filled.expectedRevision;
        operationId = filled.operationId;
        if (filled.generated) {
          await confirmOnTerminal({
            title: 'aipcs export',
            fields: [
              ['service_id', plan.serviceId],
              ['operational_status', filled.current.operationalStatus],
              ['expected_revision', expectedRevision.toString()],
              ['operation_id', operationId],
            ],
            generatedOperationId: filled.generatedOperationId,
          });
        }
      }
      const file = ExportFile.create(plan.output);
      const progress = plan.progress ? new TransferProgress({ label: 'aipcs export', write: toStderr }) : null;
      const sink = progress
        ? (chunk: Uint8Array) => {
            file.write(chunk);
            progress.add(chunk.length);
          }
        : file.write;
      try {
        progress?.begin('writing');
        const result = await transfer.export({ serviceId: plan.serviceId, expectedServiceRevision: expectedRevision as bigint, operationId: operationId as string }, sink);
        progress?.end();
        file.publish();
        return result;
      } finally {
        file.dispose();
      }
    });
  },
};

interface ImportPlan {
  readonly input: string;
  readonly dryRun: boolean;
  readonly operationId: string | null;
  /** Progress lines on stderr (`--format human`). */
  readonly progress: boolean;
}

export const importCommand: AdminCommand<ImportPlan> = {
  check(invocation, interactive) {
    const input = checkFilePath(invocation.options['input'], '--input');
    if (!input.ok) return input;
    const dryRun = invocation.options['dryRun'] === true;
    const operationId = checkOptionalUuid(invocation.options['operationId'], '--operation-id');
    if (!operationId.ok) return operationId;
    if (dryRun) {
      if (operationId.value !== null) return { ok: false, error: invalidArgument('--operation-id', 'A dry run takes no operation id.') };
      if (invocation.options['yes'] === true) return { ok: false, error: invalidArgument('--yes', 'A dry run takes no confirmation.') };
    } else if (!interactive) {
      if (operationId.value === null) return { ok: false, error: missingFlag('--operation-id') };
      if (invocation.options['yes'] !== true) return { ok: false, error: missingFlag('--yes') };
    }
    return ok({ input: input.value, dryRun, operationId: operationId.value, progress: formatOf(invocation.options) === 'human' });
  },
  async run(plan, runtime, interactive) {
    requirePersistent(runtime);
    if (plan.dryRun) {
      // A dry run needs no registry and writes nothing anywhere, but its
      // configuration composes as the import's would.
      checkAdminComposition(runtime);
      const fd = openArtefact(plan.input);
      try {
        const progress = importProgress(plan, fd);
        progress?.begin('validating');
        const artefact = await TRANSFER_CODEC.read(() => fileChunks(fd, (chunk) => progress?.add(chunk.length), INPUT_UNAVAILABLE));
        progress?.end();
        return importDryRunResult(artefact, TRANSFER_CODEC);
      } finally {
        closeSync(fd);
      }
    }
    // The whole artefact is validated (and spooled) before storage is even
    // opened: a defective one leaves the data root untouched (spec §1.9.5).
    const fd = openArtefact(plan.input);
    let spool: ArtefactSpool | null = null;
    try {
      const progress = importProgress(plan, fd);
      spool = new ArtefactSpool(fd, progress && {
        pass: (pass) => progress.begin(pass === 1 ? 'validating' : 'staging'),
        chunk: (bytes) => progress.add(bytes),
      });
      const artefact = await TRANSFER_CODEC.read(spool.open);
      progress?.end();
      return await withComposition(runtime, true, async (composition) => {
        const operator = requireOperator(composition);
        const transfer = operator.transfer;
        if (!transfer) throw refusal('storage_unavailable');
        const operationId = plan.operationId ?? randomUUID();
        if (interactive) {
          await confirmOnTerminal({
            title: 'aipcs import',
            fields: [
              ['service_id', artefact.service.serviceId],
              ['domain_name', artefact.service.domainName],
              ['source_backend', artefact.header.sourceBackend],
              ['destination_backend', transfer.locatorFor(artefact.service.serviceId).backend],
              ['frame_count', String(artefact.summary.frameCount)],
              ['root_sha256', artefact.summary.rootSha256],
              ['operation_id', operationId],
            ],
            generatedOperationId: plan.operationId === null,
          });
        }
        const result = await transfer.import(operationId, artefact);
        progress?.end();
        return withCurrentService(operator, result, artefact.service.serviceId);
      });
    } finally {
      spool?.dispose();
      closeSync(fd);
    }
  },
};

/** Import progress against the input's size, or null in machine mode. */
function importProgress(plan: ImportPlan, fd: number): TransferProgress | null {
  if (!plan.progress) return null;
  let totalBytes: number | null = null;
  try {
    totalBytes = fstatSync(fd).size;
  } catch {
    // Progress without a percentage.
  }
  return new TransferProgress({ label: 'aipcs import', write: toStderr, totalBytes });
}

interface PurgePlan extends Preconditions {
  readonly authority: PurgeAuthority;
}

export const purgeCommand: AdminCommand<PurgePlan> = {
  check(invocation, interactive) {
    const plan = preconditions(invocation);
    if (!plan.ok) return plan;
    const receipt = checkOptionalUuid(invocation.options['receipt'], '--receipt');
    if (!receipt.ok) return receipt;
    const confirm = checkOptionalUuid(invocation.options['confirmServiceId'], '--confirm-service-id');
    if (!confirm.ok) return confirm;
    // The order of §1.9.1: revision, operation id, one authority, --yes, the confirmation.
    if (!interactive) {
      const machine = requireMachineFlags(invocation, plan.value, false);
      if (!machine.ok) return machine;
    }
    const override = invocation.options['override'] === true;
    if (receipt.value === null && !override) return { ok: false, error: invalidArgument('--receipt', 'Exactly one of --receipt or --override is required.') };
    if (!interactive && invocation.options['yes'] !== true) return { ok: false, error: missingFlag('--yes') };
    if (!interactive && confirm.value === null) return { ok: false, error: missingFlag('--confirm-service-id') };
    if (confirm.value !== null && confirm.value !== plan.value.serviceId) {
      return { ok: false, error: invalidArgument('--confirm-service-id', 'The confirmation must equal SERVICE_ID.') };
    }
    const authority: PurgeAuthority = receipt.value === null ? { kind: 'explicit_override' } : { kind: 'verified_receipt', receiptId: receipt.value };
    return ok({ ...plan.value, authority });
  },
  run(plan, runtime, interactive) {
    requirePersistent(runtime);
    return withComposition(runtime, true, async (composition) => {
      const operator = requireOperator(composition);
      let expectedRevision = plan.expectedRevision;
      let operationId = plan.operationId;
      if (interactive) {
        const filled = await completeInteractively(operator, plan);
        expectedRevision = filled.expectedRevision;
        operationId = filled.operationId;
        // Only an archived service can be purged: the operator is not asked to type its id for nothing.
        if (filled.generatedOperationId && filled.current.operationalStatus !== 'archived') throw refusal('unsupported_transition');
        await confirmOnTerminal({
          title: 'aipcs service purge (irreversible)',
          fields: [
            ['service_id', plan.serviceId],
            ['operational_status', filled.current.operationalStatus],
            ['expected_revision', expectedRevision.toString()],
            ['operation_id', operationId],
            ['authority', plan.authority.kind === 'explicit_override' ? 'explicit_override' : `verified_receipt:${plan.authority.receiptId}`],
          ],
          typed: plan.serviceId,
          generatedOperationId: filled.generatedOperationId,
        });
      }
      return operator.operations.purge({ serviceId: plan.serviceId, expectedServiceRevision: expectedRevision as bigint, operationId: operationId as string, authority: plan.authority });
    });
  },
};
