// Executed evidence for one state (spec 8): materialise the state in a fresh
// evaluation folder, run the command there, inspect the folder against the
// state, and store the captures and the evidence v2. Process handling is
// execute.ts's; object rules are core's.
import { lstat, mkdtemp, readFile, chmod, readdir, realpath, rename, rmdir, unlink } from 'node:fs/promises';
import { OWNER_TAG_PATTERN, ownerTag, ownerTagGone } from '../../common/process.js';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Writable } from 'node:stream';
import { encodeObject } from '../core/codec.js';
import { diffFiles, sameFiles } from '../core/effects.js';
import { AipError } from '../core/errors.js';
import { shownPath } from '../core/quote.js';
import type { EvidenceV2, EvidenceV2Data, FileMap, Id, StateV1, Workspace } from '../core/objects.js';
import { expectedResult } from '../core/schemas.js';
import type { Repository } from '../repository/repository.js';
import { materialize, snapshotTree } from '../repository/tree.js';
import { isIgnored, type IgnoreRules } from '../core/ignore-rules.js';
import { execute, type ExecuteResult } from './execute.js';
import { errorCode } from '../../common/errors.js';

export interface RunRequest {
  readonly stateId: Id;
  readonly argv: readonly string[];
  readonly kind: string;
  readonly timeoutNs: bigint;
  readonly outputLimit: number;
  /** Record the state's producing operations (default) or none. */
  readonly withOperations: boolean;
  readonly keep: boolean;
  readonly signal?: AbortSignal;
  readonly tee?: { readonly stdout: Writable; readonly stderr: Writable };
  readonly graceMs?: number;
  /** Overrides the runner identity (default `{package name}/{package version}`). */
  readonly runner?: string;
}

export interface RunOutcome {
  readonly id: Id;
  readonly evidence: EvidenceV2;
  /** The evaluation folder, when kept. */
  readonly evaluationDir: string | undefined;
  /** Why the evaluation folder (not kept) could not be removed after the evidence was stored; it is left behind. */
  readonly removalError?: string;
}

let cachedRunner: string | undefined;

/** `{package name}/{package version}` of the nearest package.json above this module. */
export async function runnerIdentity(): Promise<string> {
  if (cachedRunner !== undefined) return cachedRunner;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (typeof pkg.name === 'string' && typeof pkg.version === 'string') {
        cachedRunner = `${pkg.name}/${pkg.version}`;
        return cachedRunner;
      }
    } catch {
      // keep looking upwards
    }
    const parent = dirname(dir);
    if (parent === dir) return (cachedRunner = 'aip/unknown');
    dir = parent;
  }
}

export function platformName(): string {
  return `${process.platform}/${process.arch}`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Step 7: compare the evaluation folder with the state. */
async function inspect(dir: string, state: StateV1, rules: IgnoreRules, maxObjectBytes: number, run: ExecuteResult): Promise<{ workspace: Workspace; error: string }> {
  if (run.groupLingered) return { workspace: 'unknown', error: 'process group still had members after the command ended' };
  if (run.escaped > 0) {
    const [processes, were] = run.escaped === 1 ? ['process', 'was'] : ['processes', 'were'];
    return { workspace: 'unknown', error: `${run.escaped} ${processes} the command started outside its process group and session ${were} still running in the evaluation folder` };
  }
  // The folder itself replaced by a link (to a copy of the state, say): the walk would follow it and see a clean tree.
  if ((await lstat(dir).catch(() => undefined))?.isSymbolicLink() === true) return { workspace: 'changed', error: '' };
  if (await exists(join(dir, '.aip'))) return { workspace: 'unknown', error: 'the command created .aip in the evaluation directory' };
  const snapshot = await snapshotTree(dir, { rules, maxObjectBytes, statePaths: state.data.files });
  if (!snapshot.ok) {
    // Something a state cannot hold (a link, a bad name) means the tree changed; a read error means we cannot tell.
    // An entry that vanished while being read is such an error here (no skipVanished, D51): after the
    // group is gone nothing should change this folder, so something outside it still does.
    return snapshot.error.code === 'snapshot.invalid'
      ? { workspace: 'changed', error: '' }
      : { workspace: 'unknown', error: snapshot.error.message };
  }
  return { workspace: sameFiles(snapshot.value, state.data.files) ? 'clean' : 'changed', error: '' };
}

/**
 * `aip-run-{pid}.{pid namespace}-{6 random}` (`aip-run-{pid}-…` where /proc
 * tells no namespace, and from earlier versions): the evaluation folder of a
 * run that removes it at its end (a `--keep` folder has no pid).
 */
const REMOVABLE_RUN_DIR = new RegExp(`^aip-run-${OWNER_TAG_PATTERN}-[A-Za-z0-9]{6}$`);

/**
 * Removes the evaluation folders of runs that were killed (kill -9, a crash)
 * before they could remove them: each is a copy of a whole state. Only a
 * folder of ours named with a pid gone from this host (never a `--keep` one)
 * and over a minute old goes. Best effort.
 */
async function removeDeadRunsFolders(parent: string): Promise<void> {
  try {
    for (const name of await readdir(parent)) {
      const match = REMOVABLE_RUN_DIR.exec(name);
      // A pid of another PID namespace (a container sharing the temp folder) names another process here (D66).
      if (match === null || !ownerTagGone(match[1] ?? '', match[2])) continue;
      const path = join(parent, name);
      const seen = await lstat(path);
      if (seen.isDirectory() && seen.uid === process.getuid?.() && seen.mtimeMs < Date.now() - 60_000) await removeTree(path);
    }
  } catch {
    // Left for the next run.
  }
}

/** Unlinks of one folder's files in flight at once while an evaluation folder is removed. */
const UNLINKS_AT_ONCE = 64;

/** A folder deeper than this (in bytes of its path) is moved up before it is emptied: Linux paths end at 4096. */
const DEEPEST_PATH_BYTES = 2048;

/** Runs a removal step; what is already gone counts as removed. */
async function unlessGone(step: Promise<unknown>): Promise<void> {
  try {
    await step;
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}

/**
 * Removes an evaluation folder the command may have rearranged, following no
 * symbolic link: Node's `rm` reads through a link whose unlink fails with
 * EPERM (in a folder the command made immutable) and removed what the link
 * points to, outside the folder; a folder the command replaced by a link is
 * unlinked, never entered or chmod'ed. Folders get write permission back
 * first (the command may have taken it away). Names are read as bytes (they
 * need not be UTF-8), and a folder nested deeper than paths reach is moved
 * up into a fresh folder at the top first (`rm` failed with ENAMETOOLONG).
 * A mount point inside (a bind mount the command made) is not entered: `rm`
 * emptied what was mounted there; it stays, and the removal fails naming it.
 */
async function removeTree(dir: string): Promise<void> {
  let top;
  try {
    top = await lstat(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  if (!top.isDirectory()) return unlessGone(unlink(dir));
  const slash = Buffer.from('/');
  const real = await realpath(dir); // mount points are listed by their real paths
  const mounts = await mountPointsUnder(real);
  if (mounts.has(Buffer.from(real).toString('latin1'))) throw new Error(`${real} is a mount point; what is mounted there was left alone`);
  const kept: string[] = [];
  // Pre-order: a folder comes before the folders inside it, so removing them in reverse order empties each first.
  const folders = [Buffer.from(real)];
  for (let i = 0; i < folders.length; i++) {
    const folder = folders[i] as Buffer;
    await chmod(folder, 0o700).catch(() => undefined); // a real folder (from lstat or a dirent), never a link
    let entries;
    try {
      entries = await readdir(folder, { withFileTypes: true, encoding: 'buffer' });
    } catch (error) {
      if (errorCode(error) === 'ENOENT') continue;
      throw error;
    }
    // Files go as they are listed, a few at a time: one unlink in flight per
    // file of a folder of a million (a command's build output) held gigabytes.
    let unlinking: Promise<void>[] = [];
    for (const entry of entries) {
      const path = Buffer.concat([folder, slash, entry.name]);
      if (!entry.isDirectory()) {
        unlinking.push(unlessGone(unlink(path)));
        if (unlinking.length >= UNLINKS_AT_ONCE) {
          await Promise.all(unlinking);
          unlinking = [];
        }
      } else if (mounts.has(path.toString('latin1'))) kept.push(path.toString());
      else if (path.length <= DEEPEST_PATH_BYTES) folders.push(path);
      else if (hasMountBelow(mounts, path)) kept.push(path.toString()); // moved up, it would take its mount out of sight
      else {
        const shallow = Buffer.from(await mkdtemp(join(real, 'deep-')));
        const moved = Buffer.concat([shallow, slash, Buffer.from('d')]);
        await rename(path, moved);
        folders.push(shallow);
      }
    }
    await Promise.all(unlinking);
  }
  if (kept.length > 0) throw new Error(`${kept.join(', ')} ${kept.length === 1 ? 'is a mount point' : 'are mount points'}; what is mounted there was left alone`);
  for (const folder of folders.reverse()) await unlessGone(rmdir(folder));
}

function hasMountBelow(mounts: ReadonlySet<string>, folder: Buffer): boolean {
  const prefix = `${folder.toString('latin1')}/`;
  for (const point of mounts) if (point.startsWith(prefix)) return true;
  return false;
}

/** The mount points at or below `root` (real paths, as latin1 text of their bytes) from /proc/self/mountinfo; none elsewhere. */
async function mountPointsUnder(root: string): Promise<Set<string>> {
  const found = new Set<string>();
  let table: string;
  try {
    table = await readFile('/proc/self/mountinfo', 'latin1');
  } catch {
    return found; // not Linux, or no /proc
  }
  const top = Buffer.from(root).toString('latin1');
  for (const line of table.split('\n')) {
    const field = line.split(' ')[4];
    if (field === undefined) continue;
    // Space, tab, newline and backslash are written as octal escapes.
    const point = field.replace(/\\([0-7]{3})/g, (_all, octal: string) => String.fromCharCode(parseInt(octal, 8)));
    if (point === top || point.startsWith(`${top}/`)) found.add(point);
  }
  return found;
}

/** Any valid time: every time has the same encoded length. */
const SOME_TIME = '2000-01-01T00:00:00.000000000Z';

/** A 64-bit count as evidence holds it: a plain number while exact, else the bigint. */
const uint = (value: bigint): number | bigint => (value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value);

/** What one run observed; the rest of its evidence comes from the request. */
type ObservedRun = Pick<
  EvidenceV2Data,
  'error' | 'result' | 'stderr' | 'stdout' | 'exit_code' | 'workspace' | 'executable' | 'started_at' | 'duration_ns' | 'finished_at' | 'termination' | 'workspace_error'
>;

/** Executed evidence (v2) of `request` on `state`, with the run's observations. */
function executedEvidence(request: RunRequest, state: StateV1, runner: string, observed: ObservedRun): EvidenceV2 {
  return {
    type: 'evidence',
    version: 2,
    data: {
      cwd: '.',
      argv: [...request.argv],
      kind: request.kind,
      error: observed.error,
      state: request.stateId,
      result: observed.result,
      runner,
      stderr: observed.stderr,
      stdout: observed.stdout,
      platform: platformName(),
      exit_code: observed.exit_code,
      workspace: observed.workspace,
      executable: observed.executable,
      operations: request.withOperations ? [...state.data.operations] : [],
      provenance: 'executed',
      started_at: observed.started_at,
      timeout_ns: uint(request.timeoutNs),
      duration_ns: observed.duration_ns,
      environment: 'inherited',
      finished_at: observed.finished_at,
      termination: observed.termination,
      output_limit: request.outputLimit,
      workspace_error: observed.workspace_error,
    },
  };
}

/**
 * Refuses, before anything runs, a request whose evidence could not be
 * stored: the evidence built from the request with every run-dependent field
 * at its smallest encoding (termination `exited`, exit 0, result `pass`,
 * workspace `clean`, empty error texts, a two-character executable, duration
 * 0; captures are fixed-size references) is a lower bound of the real one.
 * If even that exceeds `max_object_bytes`, or breaks a schema rule the
 * request's own fields decide, storing would fail after the command ran.
 * Same code as the store would give (`cbor.too_large`, or the schema's).
 */
async function refuseEvidenceTooLarge(repo: Repository, request: RunRequest, state: StateV1, runner: string): Promise<void> {
  const capture = { artifact: request.stateId, truncated: false };
  const floor = executedEvidence(request, state, runner, {
    error: '',
    result: 'pass',
    stderr: capture,
    stdout: capture,
    exit_code: 0,
    workspace: 'clean',
    executable: '/x',
    started_at: SOME_TIME,
    duration_ns: 0,
    finished_at: SOME_TIME,
    termination: 'exited',
    workspace_error: '',
  });
  const encoded = encodeObject(floor);
  if (!encoded.ok) throw encoded.error;
  const size = encoded.value.bytes.length;
  const max = repo.config.maxObjectBytes;
  if (size > max) {
    const argvBytes = request.argv.reduce((sum, arg) => sum + Buffer.byteLength(arg), 0);
    throw new AipError('cbor.too_large', `the evidence would take at least ${size} bytes (argv ${argvBytes} of them), above max_object_bytes ${max}; nothing was run`);
  }
}

/** Whether the state's `.aipignore` ignores the file at `path` or a folder above it (the walk skips both). */
function ignoredByRules(rules: IgnoreRules, path: string): boolean {
  const parts = path.split('/');
  for (let i = 1; i < parts.length; i++) {
    if (isIgnored(rules, parts.slice(0, i).join('/'), true)) return true;
  }
  return isIgnored(rules, path, false);
}

/** Names the first path (bytewise) where the materialised folder differs from the state, and how. */
function firstMismatch(expected: FileMap, found: FileMap, rules: IgnoreRules): string {
  const first = diffFiles(expected, found)[0];
  if (first === undefined) return 'no path differs';
  const path = shownPath(first.path);
  if (first.after !== null && first.before !== null) return `${path} differs from the state's file`;
  if (first.after !== null) return `${path} is not in the state`;
  // A state can hold a path its own .aipignore ignores (made by another tool, or an operation put as is).
  if (ignoredByRules(rules, first.path)) return `the state holds ${path}, which the state's .aipignore ignores, so a run could not see it change`;
  return `${path} is missing`;
}

/** The workspace of a run cancelled before its folder was known to hold the state (nothing ran; the folder may be partial). */
const CANCELLED_BEFORE_FOLDER_READY = {
  workspace: 'unknown',
  error: 'cancelled before the evaluation folder was checked against the state; nothing was run',
} as const satisfies { workspace: Workspace; error: string };

export async function runEvidence(repo: Repository, request: RunRequest): Promise<RunOutcome> {
  const state = await repo.getTyped(request.stateId, 'state');
  const rules = await repo.ignoreRulesOf(state);
  if (!rules.ok) throw new AipError('run.materialize', `cannot read the state's .aipignore: ${rules.error.message}`);

  const runner = request.runner ?? (await runnerIdentity());
  await refuseEvidenceTooLarge(repo, request, state, runner);

  await removeDeadRunsFolders(tmpdir());
  // A folder the run removes at its end carries the runner's pid, so that one
  // left by a killed runner can be told from a live run's and removed later.
  const dir = await mkdtemp(join(tmpdir(), request.keep ? 'aip-run-' : `aip-run-${ownerTag()}-`));
  let outcome: RunOutcome;
  let folderRemoved = false;
  try {
    const signal = request.signal;
    const written = await materialize(dir, state.data.files, (id) => repo.artifactContent(id), 'exact', signal);
    if (!written.ok) throw new AipError('run.materialize', `cannot materialise state ${request.stateId}: ${written.error.message}`);
    // A signal while the folder is made or checked (seconds for a large
    // state) cuts that work short, and the run is recorded as cancelled with
    // nothing run, at once rather than after the whole state is written.
    const check = signal?.aborted === true ? undefined : await snapshotTree(dir, { rules: rules.value, maxObjectBytes: repo.config.maxObjectBytes, ...(signal ? { signal } : {}) });
    const matches = check?.ok === true && sameFiles(check.value, state.data.files);
    // A walk the signal stopped short is no verdict (one that read it all is).
    const checked = matches || (check !== undefined && signal?.aborted !== true);
    if (checked && !matches && check !== undefined) {
      const why = check.ok ? firstMismatch(state.data.files, check.value, rules.value) : check.error.message;
      throw new AipError('run.materialize', `the materialised folder does not match state ${request.stateId}: ${why}`);
    }

    const run = await execute({
      argv: request.argv,
      cwd: dir,
      timeoutNs: request.timeoutNs,
      outputLimit: request.outputLimit,
      ...(request.signal ? { signal: request.signal } : {}),
      ...(request.tee ? { tee: request.tee } : {}),
      ...(request.graceMs === undefined ? {} : { graceMs: request.graceMs }),
    });
    const workspace = checked ? await inspect(dir, state, rules.value, repo.config.maxObjectBytes, run) : CANCELLED_BEFORE_FOLDER_READY;

    const store = async (): Promise<RunOutcome> => {
      const stdout = await repo.putArtifact(run.stdout.bytes);
      if (!stdout.ok) throw stdout.error;
      const stderr = await repo.putArtifact(run.stderr.bytes);
      if (!stderr.ok) throw stderr.error;
      const evidence = executedEvidence(request, state, runner, {
        error: run.error,
        result: expectedResult(run.termination, workspace.workspace, run.exitCode),
        stderr: { artifact: stderr.value.id, truncated: run.stderr.truncated },
        stdout: { artifact: stdout.value.id, truncated: run.stdout.truncated },
        exit_code: run.exitCode,
        workspace: workspace.workspace,
        executable: run.executable,
        started_at: run.startedAt,
        duration_ns: uint(run.durationNs),
        finished_at: run.finishedAt,
        termination: run.termination,
        workspace_error: workspace.error,
      });
      const stored = await repo.putObject(evidence);
      if (!stored.ok) throw stored.error;
      return { id: stored.value.id, evidence, evaluationDir: request.keep ? dir : undefined };
    };
    try {
      outcome = await store();
    } catch (error) {
      // A write refused (a full disk): what the command wrote in its folder
      // may be what filled it, and the folder goes anyway. Without it the
      // evidence may fit; losing the record of a command that ran is worse.
      if (request.keep || !(error instanceof AipError) || error.code !== 'io') throw error;
      // A folder that cannot go leaves the refusal as the answer, not the removal's error.
      await removeTree(dir).catch(() => {
        throw error;
      });
      folderRemoved = true;
      outcome = await store();
    }
  } catch (error) {
    // The error that stopped the run is the one to report, not a failed removal after it.
    await removeTree(dir).catch(() => undefined);
    throw error;
  }
  if (request.keep || folderRemoved) return outcome;
  // The evidence is stored: a folder the command made impossible to remove
  // (an immutable file, a mount) must not turn its outcome into an error.
  try {
    await removeTree(dir);
    return outcome;
  } catch (error) {
    return { ...outcome, removalError: `cannot remove ${dir}: ${error instanceof Error ? error.message : String(error)}` };
  }
}
