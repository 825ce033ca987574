// Running one argv without a shell in its own process group (spec 8 steps
// 2-6, 8, 9): executable lookup, bounded capture of both pipes, the deadline,
// cancellation, group cleanup and termination classification. It knows
// nothing about repositories, states or evidence objects.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:fs';
import { access, open, readdir, readFile, readlink, realpath, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { endianness } from 'node:os';
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import type { Termination } from '../core/objects.js';
import { formatTime, isAbsoluteExecutable } from '../core/value-rules.js';
import { errorCode } from '../../common/errors.js';

export interface ExecuteOptions {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly timeoutNs: bigint;
  readonly outputLimit: number;
  /** Aborting cancels the command; the reason (a signal name such as SIGINT) goes into the error text. */
  readonly signal?: AbortSignal;
  /** Live copies of the child's output (`aip run --tee`). */
  readonly tee?: { readonly stdout: Writable; readonly stderr: Writable };
  /** Grace periods for group cleanup and pipe EOF after the child ends (default 2000 ms each). */
  readonly graceMs?: number;
  /** PATH used for lookup (default the inherited one). */
  readonly path?: string;
}

export interface CapturedStream {
  readonly bytes: Uint8Array;
  readonly truncated: boolean;
}

export interface ExecuteResult {
  readonly termination: Termination;
  readonly exitCode: number | null;
  readonly error: string;
  readonly executable: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly durationNs: bigint;
  readonly stdout: CapturedStream;
  readonly stderr: CapturedStream;
  /** The process group still had live members after cleanup: the workspace cannot be trusted. */
  readonly groupLingered: boolean;
  /** Processes outside the group and session still working in `cwd` at the end (killed then): neither can it. */
  readonly escaped: number;
}

/** Keeps the first `limit` bytes, counts and discards the rest, so the pipe is always drained. */
class BoundedCapture {
  // Chunks rather than one preallocated buffer: a 1 MiB limit should not cost 1 MiB per quiet stream.
  private readonly chunks: Uint8Array[] = [];
  private kept = 0;
  private total = 0;
  ended = false;
  failure: string | undefined;

  constructor(private readonly limit: number) {}

  add(chunk: Uint8Array): void {
    this.total += chunk.length;
    const room = this.limit - this.kept;
    if (room <= 0) return;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(new Uint8Array(part));
    this.kept += part.length;
  }

  result(): CapturedStream {
    return { bytes: new Uint8Array(Buffer.concat(this.chunks, this.kept)), truncated: this.total > this.limit };
  }
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * argv[0] with a slash is resolved against the evaluation folder (it must
 * exist as written, so `./a.sh/` or `./missing/../a.sh`, which the kernel
 * would not find, are not found either; spawning reports whether it can
 * run); a bare name is searched in the absolute PATH entries for an
 * executable regular file.
 */
export async function resolveExecutable(program: string, cwd: string, pathVariable: string | undefined): Promise<string | undefined> {
  if (program.includes('/') || (process.platform === 'win32' && program.includes('\\'))) {
    const candidate = resolve(cwd, program);
    // `/`, `//` or `/..` name the root folder, which is no program and which
    // evidence cannot hold as its executable (spec rule 2, P9): not found.
    if (!isAbsoluteExecutable(candidate)) return undefined;
    try {
      await stat(isAbsolute(program) ? program : `${cwd}${sep}${program}`);
      return candidate;
    } catch {
      return undefined;
    }
  }
  for (const dir of (pathVariable ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue; // relative entries would depend on the evaluation folder
    const candidate = join(dir, program);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** ELF e_machine values the kernel of each host architecture loads natively or through its compat loader. */
const ELF_MACHINES: Partial<Record<string, readonly number[]>> = { x64: [62, 3, 6], arm64: [183, 40], ia32: [3, 6], arm: [40] };

/**
 * Whether the kernel's own loaders would refuse `path` (ENOEXEC): true only
 * when that can be told beforehand; false when it may run or the kernel
 * decides. A `#!` script is refused when its interpreter is (the kernel
 * fails the whole exec); an ELF file when it is no executable or shared
 * object (e_type) for this architecture (e_machine), as binfmt_elf checks
 * before anything else.
 */
async function refusedByKernel(path: string, cwd: string, depth: number): Promise<boolean> {
  let head: Buffer;
  try {
    await access(path, constants.X_OK); // without permission spawn fails with EACCES itself
    // O_NONBLOCK: a FIFO would otherwise wait for a writer for ever (exec refuses it with EACCES).
    const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      if (!(await handle.stat()).isFile()) return false; // spawn reports what it is
      // 256 bytes: the kernel reads no more of a `#!` line (BINPRM_BUF_SIZE), and an ELF header takes at most 64.
      const { bytesRead, buffer } = await handle.read(Buffer.alloc(256), 0, 256, 0);
      head = buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch {
    return false; // unreadable (execute-only binaries exist): the kernel decides
  }
  if (head.subarray(0, 2).toString('latin1') === '#!') {
    const line = head.subarray(2);
    const end = line.indexOf(0x0a);
    if (end === -1) return false; // a line the kernel may cut or refuse: it decides
    const interpreter = /^[ \t]*([^ \t\0]*)/.exec(line.subarray(0, end).toString('latin1'))?.[1] ?? '';
    if (interpreter === '') return true; // `#!` naming no interpreter: ENOEXEC
    // The kernel nests at most a few interpreters (ELOOP beyond); a missing one it reports itself.
    if (depth >= 4) return false;
    // Resolved as the kernel does, against the command's working folder.
    return refusedByKernel(resolve(cwd, Buffer.from(interpreter, 'latin1').toString()), cwd, depth + 1);
  }
  if (head.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) {
    if (head.length < 20) return true; // the kernel reads the missing header bytes as zeros: e_type 0
    const little = endianness() === 'LE'; // the kernel reads the header in its own byte order
    const type = little ? head.readUInt16LE(16) : head.readUInt16BE(16);
    const machine = little ? head.readUInt16LE(18) : head.readUInt16BE(18);
    const machines = ELF_MACHINES[process.arch];
    return !(type === 2 || type === 3) || (machines !== undefined && !machines.includes(machine));
  }
  return true;
}

/**
 * Why the kernel would refuse to execute `path` (ENOEXEC), when that can be
 * told beforehand; undefined when it may run. Node's spawn goes through
 * execvp, which runs a file the kernel refuses with /bin/sh instead (POSIX),
 * so a script without `#!`, a corrupt binary or a script whose interpreter
 * is one of those would run under a shell that the evidence does not name,
 * instead of being the start_error of spec 8 step 3. On Linux a file is
 * executable as ELF, as `#!` script, or through a binfmt_misc handler; when
 * handlers are registered (or the file may not be executed or read, or on
 * other systems) spawn and the kernel decide. `cwd` is the command's working
 * folder, against which a relative `#!` interpreter is found.
 */
export async function unrunnableFormat(path: string, cwd = dirname(path)): Promise<string | undefined> {
  if (process.platform !== 'linux') return undefined;
  if (!(await refusedByKernel(path, cwd, 0))) return undefined;
  try {
    const handlers = (await readdir('/proc/sys/fs/binfmt_misc')).filter((name) => name !== 'register' && name !== 'status');
    if (handlers.length > 0) return undefined;
  } catch {
    // not mounted: no handler this process could see
  }
  return `spawn ${path} ENOEXEC`;
}

/** The /proc entries of processes (Linux), or undefined without a usable /proc. */
async function processIds(): Promise<number[] | undefined> {
  if (process.platform !== 'linux') return undefined;
  try {
    return (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry)).map(Number);
  } catch {
    return undefined;
  }
}

/**
 * The state, group and session of a process from /proc/PID/stat, or
 * undefined once it is gone. A zombie (`Z`, `X`: an exited process nobody
 * reaped, as under a PID 1 that does not reap orphans) holds no pipes and
 * changes no files, so callers treat it as gone.
 */
async function processStat(pid: number): Promise<{ readonly living: boolean; readonly group: number; readonly session: number } | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' '); // state, ppid, pgrp, session, ...
  return { living: fields[0] !== 'Z' && fields[0] !== 'X', group: Number(fields[2]), session: Number(fields[3]) };
}

/** Whether any member of process group `pgid` is still alive. */
export async function groupAlive(pgid: number): Promise<boolean> {
  const pids = await processIds();
  if (pids !== undefined) {
    for (const pid of pids) {
      const stat = await processStat(pid);
      if (stat?.living === true && stat.group === pgid) return true;
    }
    return false;
  }
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return errorCode(error) !== 'ESRCH';
  }
}

function killProcess(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false; // already gone
  }
}

/**
 * Kills what the command left behind, walking /proc until nothing is left, and says how
 * many of them had left its session. The command leads a session (spawned
 * detached): a shell with job control (`set -m`) puts background jobs in
 * groups of their own, which the group kill of step 6 does not reach (D60).
 * A daemon started with `setsid` left the session too, but keeps the working
 * directory it inherited unless it changes it, and nothing else has business
 * in a fresh evaluation folder (D61). Done after the EOF wait, so the
 * evidence is what step 6 says (such a process holding a pipe is a capture
 * error). Session members are not counted: they are the command's own.
 */
async function killLeftovers(sid: number, folder: string): Promise<number> {
  const root = await realpath(folder).catch(() => undefined);
  const escaped = new Set<number>();
  // A leftover can start a child between the walk's reading of the process
  // list and its kill (a background loop), and the child outlived the run:
  // the walk is repeated, after a pause for the kills to land, until one
  // finds nothing left to kill.
  for (let walk = 0; walk < LEFTOVER_WALKS; walk++) {
    const pids = await processIds();
    if (pids === undefined) break;
    let killed = false;
    for (const pid of pids) {
      if (pid === process.pid) continue;
      const stat = await processStat(pid);
      if (stat?.living !== true) continue;
      if (stat.session === sid) {
        killed = killProcess(pid) || killed;
        continue;
      }
      if (root === undefined) continue;
      const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => undefined); // gone, or not ours to see
      if (cwd !== undefined && (cwd === root || cwd.startsWith(`${root}${sep}`)) && killProcess(pid)) {
        escaped.add(pid);
        killed = true;
      }
    }
    if (!killed) break;
    await new Promise((resolve) => setTimeout(resolve, LEFTOVER_PAUSE_MS));
  }
  return escaped.size;
}

/** Walks over /proc for leftovers at most, and the pause between two. */
const LEFTOVER_WALKS = 20;
const LEFTOVER_PAUSE_MS = 10;

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export function formatDuration(ns: bigint): string {
  const units: [bigint, string][] = [[3_600_000_000_000n, 'h'], [60_000_000_000n, 'm'], [1_000_000_000n, 's'], [1_000_000n, 'ms'], [1_000n, 'us']];
  for (const [size, unit] of units) if (ns % size === 0n) return `${ns / size}${unit}`;
  return `${ns}ns`;
}

const MAX_TIMER_MS = 2_147_483_647;

/** A deadline that survives timeouts longer than setTimeout's 24.8-day limit. */
function startDeadline(timeoutNs: bigint, onExpire: () => void): () => void {
  let remainingMs = (timeoutNs + 999_999n) / 1_000_000n;
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    const step = remainingMs > BigInt(MAX_TIMER_MS) ? MAX_TIMER_MS : Number(remainingMs);
    remainingMs -= BigInt(step);
    timer = setTimeout(() => (remainingMs > 0n ? arm() : onExpire()), step);
  };
  arm();
  return () => clearTimeout(timer);
}

/** Output a `--tee` reader may fall behind by before the live copy skips chunks. */
export const TEE_BACKLOG_BYTES = 16 * 1024 * 1024;

const emptyCapture: CapturedStream = { bytes: new Uint8Array(0), truncated: false };

export async function execute(options: ExecuteOptions): Promise<ExecuteResult> {
  const grace = options.graceMs ?? 2000;
  const program = options.argv[0] ?? '';
  const executable = await resolveExecutable(program, options.cwd, options.path ?? process.env['PATH']);
  if (executable === undefined) {
    const now = formatTime(Date.now());
    return {
      termination: 'start_error', exitCode: null, error: `executable not found: ${program}`, executable: '', startedAt: now,
      finishedAt: now, durationNs: 0n, stdout: emptyCapture, stderr: emptyCapture, groupLingered: false, escaped: 0,
    };
  }

  const refused = await unrunnableFormat(executable, options.cwd);
  if (refused !== undefined) {
    const now = formatTime(Date.now());
    return {
      termination: 'start_error', exitCode: null, error: refused, executable, startedAt: now,
      finishedAt: now, durationNs: 0n, stdout: emptyCapture, stderr: emptyCapture, groupLingered: false, escaped: 0,
    };
  }

  const stdout = new BoundedCapture(options.outputLimit);
  const stderr = new BoundedCapture(options.outputLimit);
  let cancelledBy: string | undefined;
  let timedOut = false;

  const startedAt = formatTime(Date.now());
  const startedNs = process.hrtime.bigint();
  if (options.signal?.aborted === true) {
    return {
      termination: 'cancelled', exitCode: null, error: `cancelled by ${String(options.signal.reason)}`, executable, startedAt,
      finishedAt: startedAt, durationNs: 0n, stdout: emptyCapture, stderr: emptyCapture, groupLingered: false, escaped: 0,
    };
  }
  let child: ChildProcess;
  try {
    child = spawn(executable, options.argv.slice(1), {
      argv0: program,
      cwd: options.cwd,
      detached: true,
      shell: false,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
      // The inherited PWD names the folder aip was started in: a tool that
      // trusts it (a Makefile's $(PWD)) worked there, in the working tree,
      // instead of in the evaluation folder (D58). As a shell's `cd` does.
      ...(process.env['PWD'] === undefined ? {} : { env: { ...process.env, PWD: options.cwd } }),
    });
  } catch (error) {
    // Node emits 'error' only for EACCES, ENOENT, EAGAIN, EMFILE and ENFILE and
    // throws for other failed starts (ETXTBSY, E2BIG, ELOOP...): a start_error
    // too (step 3), named as the emitted ones are.
    const finishedNs = process.hrtime.bigint();
    const code = errorCode(error);
    return {
      termination: 'start_error', exitCode: null, error: code === undefined ? `spawn ${executable}: ${String(error)}` : `spawn ${executable} ${code}`,
      executable, startedAt, finishedAt: formatTime(Date.now()), durationNs: finishedNs - startedNs, stdout: emptyCapture, stderr: emptyCapture, groupLingered: false, escaped: 0,
    };
  }

  // Listen for the end before anything is awaited, so no event can be missed.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((settle) => {
    child.once('exit', (code, signal) => settle({ code, signal }));
  });
  const started = await new Promise<{ ok: true } | { ok: false; message: string }>((settle) => {
    child.once('spawn', () => settle({ ok: true }));
    child.once('error', (error) => settle({ ok: false, message: error.message }));
  });
  if (!started.ok) {
    const finishedNs = process.hrtime.bigint();
    return {
      termination: 'start_error', exitCode: null, error: started.message, executable, startedAt,
      finishedAt: formatTime(Date.now()), durationNs: finishedNs - startedNs, stdout: emptyCapture, stderr: emptyCapture, groupLingered: false, escaped: 0,
    };
  }
  const pgid = child.pid as number;

  const skipped = { stdout: 0, stderr: 0 };
  const wire = (stream: NodeJS.ReadableStream | null, capture: BoundedCapture, tee: Writable | undefined, name: 'stdout' | 'stderr'): Promise<void> =>
    new Promise((settle) => {
      if (stream === null) {
        capture.failure = `${name} was not connected`;
        settle();
        return;
      }
      stream.on('data', (chunk: Buffer) => {
        capture.add(chunk);
        if (tee === undefined) return;
        // The live copy never slows the command (its pipes are always drained)
        // and never buffers without bound: while its reader is far behind
        // (`| less`, `| sleep`), chunks are skipped. The capture is unaffected,
        // so the evidence does not depend on who watches.
        if (tee.writableLength > TEE_BACKLOG_BYTES) skipped[name] += chunk.length;
        else tee.write(chunk);
      });
      stream.once('end', () => {
        capture.ended = true;
        settle();
      });
      stream.once('error', (error: Error) => {
        capture.failure = `reading ${name} failed: ${error.message}`;
        settle();
      });
    });
  const stdoutDone = wire(child.stdout, stdout, options.tee?.stdout, 'stdout');
  const stderrDone = wire(child.stderr, stderr, options.tee?.stderr, 'stderr');

  const stopDeadline = startDeadline(options.timeoutNs, () => {
    timedOut = true;
    killGroup(pgid);
  });
  const onAbort = (): void => {
    cancelledBy ??= String(options.signal?.reason ?? 'abort');
    killGroup(pgid);
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // A cancel that came while the command was starting (after the check
  // above, before this listener) fired no event this listener could see.
  // (Read through a fresh reference: the compiler still narrows the one checked above to false.)
  const signalNow: AbortSignal | undefined = options.signal;
  if (signalNow?.aborted === true) onAbort();

  const exit = await exited;
  const finishedNs = process.hrtime.bigint();
  const finishedAt = formatTime(Date.now());
  stopDeadline();
  // The runner still observes the command until both pipes end (steps 6 and
  // the EOF wait), so a signal now cancels the run too (step 5; cancelled
  // precedes capture_error in step 8) and ends the wait for an EOF that a
  // process outside the group may hold back; it used to be ignored for up to
  // twice the grace period. A cancel before the exit keeps the wait: the
  // group was killed and its pipes are about to end.
  const cancelledAtExit = cancelledBy !== undefined;
  const waitOver = new AbortController(); // removes the listener below once the wait ends
  const cancelledAfterExit = new Promise<false>((settle) => {
    const signal = options.signal;
    if (signal === undefined || cancelledAtExit) return;
    if (signal.aborted) settle(false);
    else signal.addEventListener('abort', () => settle(false), { once: true, signal: waitOver.signal });
  });

  // Step 6: nothing of the command may outlive it.
  let groupLingered = false;
  if (await groupAlive(pgid)) {
    killGroup(pgid);
    const until = performance.now() + grace;
    while ((groupLingered = await groupAlive(pgid)) && performance.now() < until) await sleep(20);
  }

  // The grace timer is cancelled once both pipes end: left running, it kept
  // the process alive, so every `aip run` exited only after the full grace.
  const graceTimer = new AbortController();
  const drained = await Promise.race([
    Promise.all([stdoutDone, stderrDone]).then(() => true),
    sleep(grace, false, { signal: graceTimer.signal }).catch(() => false),
    cancelledAfterExit,
  ]);
  graceTimer.abort();
  waitOver.abort();
  options.signal?.removeEventListener('abort', onAbort);
  for (const name of ['stdout', 'stderr'] as const) {
    if (skipped[name] > 0) {
      options.tee?.stderr.write(`aip: warning: --tee skipped ${skipped[name]} bytes of ${name} its reader did not take in time (the evidence keeps its own capture)\n`);
    }
  }
  let captureError: string | undefined = stdout.failure ?? stderr.failure;
  if (!drained || !stdout.ended || !stderr.ended) {
    const open = [!stdout.ended ? 'stdout' : undefined, !stderr.ended ? 'stderr' : undefined].filter((s) => s !== undefined);
    captureError ??= `${open.join(' and ')} did not reach end of file within ${grace} ms after the command ended`;
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
  // After the pipes are judged: a leftover killed now closes the pipes it held.
  const escaped = await killLeftovers(pgid, options.cwd);

  let termination: Termination;
  let error = '';
  let exitCode: number | null = null;
  if (cancelledBy !== undefined) {
    termination = 'cancelled';
    error = `cancelled by ${cancelledBy}`;
  } else if (timedOut && exit.signal === 'SIGKILL') {
    // Only a child the deadline's kill ended timed out: a child that exited
    // while the runner was busy, with the deadline's timer run before its
    // exit was seen, ended before the kill reached it (step 8 goes on).
    termination = 'timeout';
    error = `command exceeded its ${formatDuration(options.timeoutNs)} timeout`;
  } else if (captureError !== undefined) {
    termination = 'capture_error';
    error = captureError;
  } else if (exit.signal !== null) {
    termination = 'signaled';
    error = `terminated by signal ${exit.signal}`;
  } else {
    termination = 'exited';
    exitCode = exit.code ?? 0;
  }
  return {
    termination, exitCode, error, executable, startedAt, finishedAt, durationNs: finishedNs - startedNs,
    stdout: stdout.result(), stderr: stderr.result(), groupLingered, escaped,
  };
}
