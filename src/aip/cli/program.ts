// The `aip` command tree (spec 9.3) in one readable file: each command parses
// its options, calls the repository, runner or core, and prints text or JSON.
// One top-level catch maps errors to exit codes; nothing here calls process.exit.
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { argumentsUpToUnknownCommand } from '../../common/cli-arguments.js';
import { PACKAGE_VERSION } from '../../common/package-version.js';
import { maxArtifactContent } from '../core/codec.js';
import { AipError, isAipError } from '../core/errors.js';
import { oneLine, quoted } from '../core/quote.js';
import { objectFromJson, objectToJsonChunks, stringifyJson, stringifyJsonChunks, type JsonTree } from '../core/json-presentation.js';
import type { AipObject, DecisionV1, EvidenceResult, EvidenceV1, Id, IntentV1, StateV1 } from '../core/objects.js';
import { formatTime, isNonemptyText, PATH_PROBLEM_TEXT, pathProblem, sortedIds } from '../core/value-rules.js';
import { exportBundle, importBundle } from '../repository/bundle.js';
import { ARTIFACT_ENVELOPE_ROOM } from '../repository/config.js';
import { Repository } from '../repository/repository.js';
import { checkout } from '../repository/tree.js';
import { commitSnapshot, deriveState, recordOperation, SnapshotHeadMoved, workingTreeChanges } from '../repository/workflows.js';
import { platformName, runEvidence } from '../runner/evaluate.js';
import { writeOutputFile } from './output-file.js';
import { EXIT, exitCodeFor, namingSource, parseDuration, parseSize, parseTime, readInput, readingStdin, toAipError, usage, write, type CliIo } from './support.js';
import { errorCode } from '../../common/errors.js';

interface GlobalOptions {
  readonly repo?: string;
  readonly format: 'text' | 'json';
}

/** Long output goes out in pieces of about this many characters (one string of it could pass V8's longest). */
const OUTPUT_PIECE_CHARS = 64 * 1024;

const collect = (value: string, previous: string[]): string[] => [...previous, value];

class Context {
  private repository: Repository | undefined;
  exitCode: number = EXIT.ok;

  constructor(
    readonly io: CliIo,
    readonly options: GlobalOptions,
  ) {}

  get json(): boolean {
    return this.options.format === 'json';
  }

  async repo(): Promise<Repository> {
    const warn = (message: string): void => void this.io.stderr.write(`aip: warning: ${oneLine(message)}\n`);
    this.repository ??=
      this.options.repo === undefined
        ? await Repository.find(this.io.cwd(), { warn })
        : await Repository.open(this.path(this.options.repo, '--repo'), { warn });
    return this.repository;
  }

  /**
   * `path` made absolute; the current folder is asked for only when `path` is
   * relative. An empty path is a usage error: resolved, it named the current
   * folder (`--repo ""` turned off the upward search, `init` then made a
   * nested repository).
   */
  path(path: string, what: string): string {
    refuseEmptyPath(path, what);
    return isAbsolute(path) ? resolve(path) : resolve(this.io.cwd(), path);
  }

  async out(text: string): Promise<void> {
    await write(this.io.stdout, text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Lines, written in batches: joined whole, a long listing could pass V8's longest string. */
  async outLines(lines: readonly string[]): Promise<void> {
    let batch: string[] = [];
    let length = 0;
    for (const line of lines) {
      batch.push(line, '\n');
      length += line.length + 1;
      if (length >= OUTPUT_PIECE_CHARS) {
        await write(this.io.stdout, batch.join(''));
        batch = [];
        length = 0;
      }
    }
    if (batch.length > 0) await write(this.io.stdout, batch.join(''));
  }

  async outJson(tree: JsonTree): Promise<void> {
    for (const chunk of stringifyJsonChunks(tree)) await write(this.io.stdout, chunk);
    await write(this.io.stdout, '\n');
  }

  async outObject(id: Id, object: AipObject, indent = ''): Promise<void> {
    // In pieces, each written before the next is made: a presentation can be beyond one string's reach.
    for (const chunk of objectToJsonChunks(id, object, indent)) await write(this.io.stdout, chunk);
    await write(this.io.stdout, '\n');
  }

  now(): string {
    return formatTime(this.io.now());
  }

  async resolveIds(refs: readonly string[]): Promise<Id[]> {
    const repo = await this.repo();
    const ids: Id[] = [];
    for (const ref of refs) ids.push(await repo.resolve(ref));
    return sortedIds(ids);
  }
}

/** An empty path argument names nothing: refused before the repository is looked for, as other usage errors are. */
function refuseEmptyPath(value: string | undefined, what: string): void {
  if (value === '') throw usage(`${what} must not be empty`);
}

function requireText(value: string, option: string): string {
  if (!isNonemptyText(value)) throw usage(`${option} must contain a non-whitespace character`);
  if (!value.isWellFormed()) throw usage(`${option} is not valid text`);
  return value;
}

function map(entries: [string, JsonTree][]): JsonTree {
  return new Map(entries);
}

interface LogEvidence {
  readonly id: Id;
  readonly kind: string;
  readonly result: string;
  readonly provenance: string;
}

/** One state of `aip log`: the change that made it (none for a root) and the evidence about it. */
interface LogEntry {
  readonly state: Id;
  readonly change: { readonly operation: Id; readonly intent: Id; readonly title: string; readonly effects: number } | undefined;
  readonly evidence: readonly LogEvidence[];
}

function logEntryLines({ state, change, evidence }: LogEntry): string[] {
  const lines = change === undefined ? [`state ${state} (root)`] : [`state ${state}`, `  operation ${change.operation}`, `  intent ${change.intent} ${oneLine(change.title)}`, `  effects ${change.effects}`];
  for (const e of evidence) lines.push(`  evidence ${e.id} ${oneLine(e.kind)} ${e.result} (${e.provenance})`);
  return lines;
}

function logEntryJson({ state, change, evidence }: LogEntry): JsonTree {
  const entry = new Map<string, JsonTree>([['state', state], ['root', change === undefined]]);
  if (change !== undefined) {
    entry.set('operation', change.operation);
    entry.set('intent', map([['id', change.intent], ['title', change.title]]));
    entry.set('effects', change.effects);
  }
  entry.set('evidence', evidence.map((e) => map([['id', e.id], ['kind', e.kind], ['result', e.result], ['provenance', e.provenance]])));
  return entry;
}

interface IntentFlags {
  title?: string;
  goal?: string;
  constraint: string[];
  context: string[];
  parent: string[];
  createdAt?: string;
}

async function buildIntent(ctx: Context, flags: IntentFlags): Promise<IntentV1> {
  if (flags.title === undefined || flags.goal === undefined) throw usage('an intent needs --title and --goal');
  return {
    type: 'intent',
    version: 1,
    data: {
      goal: requireText(flags.goal, '--goal'),
      title: requireText(flags.title, '--title'),
      context: await ctx.resolveIds(flags.context),
      parents: await ctx.resolveIds(flags.parent),
      created_at: flags.createdAt === undefined ? ctx.now() : parseTime(flags.createdAt, '--created-at'),
      constraints: flags.constraint,
    },
  };
}

/** `required` says when --title and --goal must be given (both are checked by buildIntent). */
function intentOptions(command: Command, required: string): Command {
  return command
    .option('--title <text>', `intent title (${required})`)
    .option('--goal <text>', `intent goal (${required})`)
    .option('--constraint <text>', 'a constraint (repeatable, order kept)', collect, [])
    .option('--context <id>', 'an object the intent cites (repeatable)', collect, [])
    .option('--parent <id>', 'a parent intent (repeatable)', collect, [])
    .option('--created-at <time>', 'creation time, UTC with nine fractional digits (default now)');
}

/** Stores an object the user described; an invalid one is input rejected (exit 5). */
async function store(ctx: Context, object: AipObject): Promise<Id> {
  const put = await (await ctx.repo()).putObject(object);
  if (!put.ok) throw put.error;
  return put.value.id;
}

async function printMade(ctx: Context, id: Id, object: AipObject): Promise<void> {
  if (ctx.json) await ctx.outObject(id, object);
  else await ctx.out(id);
}

/**
 * A command stored what it made, but another aip process moved HEAD before
 * this one could (compare-and-swap, spec 7.3): say on stderr, before the
 * `head.moved` error line, what is stored and how to move HEAD to it (D52).
 */
async function sayStoredThoughHeadMoved(ctx: Context, what: string, others: readonly (readonly [string, Id])[], state: Id, base: Id): Promise<void> {
  const stored = [...others, ['state', state] as const].map(([type, id]) => `${type} ${id}`).join(', ');
  await write(ctx.io.stderr, `aip: warning: HEAD was not moved; ${what} is stored as ${stored} (based on ${base}); to move HEAD to it: aip head ${state}\n`);
}

/**
 * `aip head STATE`: moves HEAD to an existing state by compare-and-swap. It is
 * also how a missing or damaged HEAD is repaired, which is then said.
 */
async function setHead(ctx: Context, repo: Repository, ref: string): Promise<Id> {
  let current: Id | null;
  try {
    current = await repo.readHead();
  } catch (error) {
    if (!(error instanceof AipError)) throw error;
    current = null;
  }
  const head = await repo.resolve(ref);
  await repo.getTyped(head, 'state');
  if (head !== current) await repo.moveHead(current, head);
  if (current === null) await write(ctx.io.stderr, `aip: warning: HEAD could not be read; it is now ${head}\n`);
  return head;
}

/** The names in `dir` (given as `option`), or none when it does not exist; a non-folder is a usage error. */
async function readdirIfPresent(dir: string, option: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    if (errorCode(error) === 'ENOTDIR') throw usage(`${option} ${dir} is not a folder`);
    throw error;
  }
}

export function buildProgram(io: CliIo, exit: { code: number; readonly helpWrites: Promise<void>[] }): Command {
  const program = new Command('aip');
  let ctx: Context | undefined;
  const context = (command: Command): Context => {
    ctx ??= new Context(io, command.optsWithGlobals<GlobalOptions>());
    return ctx;
  };
  program
    .description('AIP v1 objects: content-addressed intents, operations, states, evidence and decisions in a local .aip repository')
    .option('--repo <dir>', 'the project root (default: search upwards for .aip)')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .version(PACKAGE_VERSION, '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => {
        // Help text is output like any other: a write that fails (not a closed pipe, D27) is an io error.
        const written = write(io.stdout, text);
        written.catch(() => undefined);
        exit.helpWrites.push(written);
      },
      writeErr: (text) => void io.stderr.write(text),
      outputError: () => undefined, // reported once, by the top-level catch
    });

  const action = (fn: (ctx: Context, ...args: never[]) => Promise<void>) =>
    async (...args: unknown[]): Promise<void> => {
      const command = args[args.length - 1] as Command;
      const c = context(command);
      await (fn as (ctx: Context, ...rest: unknown[]) => Promise<void>)(c, ...args.slice(0, -1));
      exit.code = c.exitCode;
    };

  program
    .command('init')
    .description('create DIR/.aip with its config, the root state and HEAD, and DIR/.aipignore if absent')
    .argument('[dir]', 'project folder (default: --repo, else .)')
    .action(action(async (ctx, dir: string | undefined) => {
      // --repo names the project root for every command, init included; it was ignored here.
      const given = ctx.options.repo;
      if (dir !== undefined && given !== undefined && ctx.path(dir, 'DIR') !== ctx.path(given, '--repo')) {
        throw usage(`init DIR and --repo name different folders (${dir}, ${given})`);
      }
      const repo = await Repository.init(dir !== undefined ? ctx.path(dir, 'DIR') : ctx.path(given ?? '.', '--repo'));
      const head = await repo.readHead();
      if (ctx.json) await ctx.outJson(map([['repository', repo.aipDir], ['head', head]]));
      else await ctx.out(`initialized ${oneLine(repo.aipDir)}\nHEAD ${head}`);
    }));

  program
    .command('put')
    .description('store one object: canonical CBOR (default), its JSON presentation, or raw bytes as an artifact')
    .addOption(new Option('--from <format>', 'input format').choices(['cbor', 'json', 'raw']).default('cbor'))
    .argument('[file]', 'input file, or - for stdin')
    .action(action(async (ctx, file: string | undefined, opts: { from: 'cbor' | 'json' | 'raw' }) => {
      refuseEmptyPath(file, 'FILE');
      const repo = await ctx.repo();
      const max = repo.config.maxObjectBytes;
      let put;
      if (opts.from === 'raw') {
        put = await repo.putArtifact(await readInput(ctx.io, file, maxArtifactContent(max)));
      } else if (opts.from === 'json') {
        const limit = max * 2 + 4096;
        const bytes = await readInput(ctx.io, file, limit);
        let text: string;
        try {
          text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
        } catch (error) {
          if (errorCode(error) === 'ERR_STRING_TOO_LONG') {
            throw new AipError('object.envelope', `the JSON input of ${bytes.length} bytes is a longer text than JavaScript can hold; give the object as canonical CBOR instead`);
          }
          throw new AipError('object.envelope', 'the JSON input is not valid UTF-8');
        }
        const parsed = objectFromJson(text, limit);
        if (!parsed.ok) throw parsed.error;
        put = await repo.putEncoded(parsed.value);
      } else {
        put = await repo.putBytes(await readInput(ctx.io, file, max));
      }
      if (!put.ok) throw put.error;
      await printMade(ctx, put.value.id, put.value.object);
    }));

  program
    .command('show')
    .description('print an object as its JSON presentation')
    .argument('<id>', 'object ID, unique prefix (6+ hex digits) or HEAD')
    .action(action(async (ctx, ref: string) => {
      const repo = await ctx.repo();
      const id = await repo.resolve(ref);
      await ctx.outObject(id, await repo.get(id), '  ');
    }));

  program
    .command('cat')
    .description("write an object's canonical bytes, or with --content an artifact's content")
    .option('--content', "write the artifact's content instead")
    .argument('<id>', 'object ID, unique prefix or HEAD')
    .action(action(async (ctx, ref: string, opts: { content?: boolean }) => {
      const repo = await ctx.repo();
      const id = await repo.resolve(ref);
      if (opts.content === true) {
        const content = await repo.artifactContent(id);
        if (!content.ok) throw content.error;
        await write(ctx.io.stdout, content.value);
        return;
      }
      await repo.get(id); // verifies bytes and schema first
      const bytes = await repo.store.readBytes(id);
      if (!bytes.ok) throw bytes.error;
      await write(ctx.io.stdout, bytes.value);
    }));

  program
    .command('verify')
    .description('full verification from bytes: the given objects, or every object, the index and HEAD')
    .option('--all', 'every stored object, the reverse index and HEAD (default without IDs)')
    .argument('[ids...]', 'objects to verify with their reference closure')
    .action(action(async (ctx, refs: string[], opts: { all?: boolean }) => {
      const repo = await ctx.repo();
      if (opts.all === true && refs.length > 0) throw usage('give IDs or --all, not both');
      // One line per object, however often it is named (`aip verify HEAD <head id>`).
      const ids = refs.length === 0 ? undefined : [...new Set(await Promise.all(refs.map((r) => repo.resolve(r))))];
      const report = await repo.verify(ids);
      // Sorted by ID, HEAD first, in both forms (D19), whatever order the IDs were given in.
      const byId = (a: { id: string }, b: { id: string }): number => (a.id === b.id ? 0 : a.id === 'HEAD' ? -1 : b.id === 'HEAD' ? 1 : a.id < b.id ? -1 : 1);
      const valid = [...report.valid].sort(byId);
      const invalid = [...report.invalid].sort(byId);
      if (ctx.json) {
        await ctx.outJson(map([
          ['valid', valid.map((v) => v.id)],
          ['invalid', invalid.map((i) => map([['id', i.id], ['code', i.code], ['message', i.message]]))],
        ]));
      } else {
        const perObject = [
          ...valid.map((v) => ({ id: v.id, line: `ok ${v.id} ${v.type}/${v.version}` })),
          ...invalid.map((i) => ({ id: i.id, line: `invalid ${i.id} ${i.code}: ${oneLine(i.message)}` })),
        ].sort(byId);
        const lines = [...perObject.map(({ line }) => line), `${valid.length} verified, ${invalid.length} invalid`];
        await ctx.outLines(lines);
      }
      if (report.invalid.length > 0) ctx.exitCode = EXIT.negative;
    }));

  program
    .command('status')
    .description("compare HEAD's files with the working tree")
    .action(action(async (ctx) => {
      const repo = await ctx.repo();
      const changes = await workingTreeChanges(repo, await repo.readHead());
      if (!changes.ok) throw changes.error;
      if (ctx.json) await ctx.outJson(map([['changes', changes.value.map((c) => map([['path', c.path], ['change', c.change]]))]]));
      else await ctx.outLines(changes.value.map((c) => `${c.change} ${oneLine(c.path)}`));
    }));

  intentOptions(program.command('intent').description('make an intent'), 'required').action(action(async (ctx, flags: IntentFlags) => {
    const intent = await buildIntent(ctx, flags);
    await printMade(ctx, await store(ctx, intent), intent);
  }));

  program
    .command('op')
    .description('record the working tree as an operation on a base state (default HEAD)')
    .requiredOption('--intent <id>', 'the intent the operation serves (required)')
    .option('--base <state>', 'base state (default HEAD)')
    .option('--allow-empty', 'record a no-change operation')
    .action(action(async (ctx, opts: { intent: string; base?: string; allowEmpty?: boolean }) => {
      const repo = await ctx.repo();
      const intent = await repo.resolve(opts.intent);
      const base = await repo.resolve(opts.base ?? 'HEAD');
      const recorded = await recordOperation(repo, intent, base, opts.allowEmpty === true);
      if (!recorded.ok) throw recorded.error;
      await printMade(ctx, recorded.value.id, recorded.value.operation);
    }));

  intentOptions(
    program
      .command('snapshot')
      .description('record the working tree as intent + operation + state and move HEAD')
      .option('--intent <id>', 'use an existing intent instead of making one')
      .option('--allow-empty', 'record a no-change operation'),
    'required without --intent',
  ).action(action(async (ctx, flags: IntentFlags & { intent?: string; allowEmpty?: boolean }) => {
    const repo = await ctx.repo();
    const intentOptionGiven =
      flags.title !== undefined ||
      flags.goal !== undefined ||
      flags.createdAt !== undefined ||
      flags.constraint.length > 0 ||
      flags.context.length > 0 ||
      flags.parent.length > 0;
    if (flags.intent !== undefined && intentOptionGiven) {
      // The intent options describe a new intent; with --intent they would be silently lost.
      throw usage('give --intent or --title/--goal (with the other intent options), not both');
    }
    const source = flags.intent !== undefined ? { existing: await repo.resolve(flags.intent) } : { create: await buildIntent(ctx, flags) };
    if ('existing' in source) await repo.getTyped(source.existing, 'intent');
    let made: Awaited<ReturnType<typeof commitSnapshot>>;
    try {
      made = await commitSnapshot(repo, source, flags.allowEmpty === true);
    } catch (error) {
      if (error instanceof SnapshotHeadMoved) {
        const { intent, operation, state } = error.stored;
        await sayStoredThoughHeadMoved(ctx, 'the snapshot', [['intent', intent], ['operation', operation]], state, error.base);
      }
      throw error;
    }
    if (!made.ok) throw made.error;
    if (ctx.json) await ctx.outJson(map([['intent', made.value.intent], ['operation', made.value.operation], ['state', made.value.state]]));
    else await ctx.out(`intent ${made.value.intent}\noperation ${made.value.operation}\nstate ${made.value.state}`);
  }));

  program
    .command('apply')
    .description("derive and store an operation's resulting state; moves HEAD if HEAD is its base")
    .argument('<operation>', 'operation ID or prefix')
    .action(action(async (ctx, ref: string) => {
      const repo = await ctx.repo();
      const id = await repo.resolve(ref);
      const head = await repo.readHead();
      const derived = await deriveState(repo, id);
      if (!derived.ok) throw derived.error;
      const base = derived.value.state.data.parents[0];
      if (base === head) {
        try {
          await repo.moveHead(head, derived.value.id);
        } catch (error) {
          if (isAipError(error) && error.code === 'head.moved') {
            await sayStoredThoughHeadMoved(ctx, "the operation's resulting state", [], derived.value.id, head);
          }
          throw error;
        }
      }
      await printMade(ctx, derived.value.id, derived.value.state);
      // The output is the state either way; say when HEAD stayed where it was.
      if (base !== head && derived.value.id !== head) {
        await write(ctx.io.stderr, `aip: warning: HEAD stays at ${head}: the operation's base is ${base}; to move it: aip head ${derived.value.id}\n`);
      }
    }));

  program
    .command('head')
    .description('print HEAD, or set it to an existing state')
    .argument('[state]', 'state ID or prefix')
    .action(action(async (ctx, ref: string | undefined) => {
      const repo = await ctx.repo();
      const head = ref === undefined ? await repo.readHead() : await setHead(ctx, repo, ref);
      if (ctx.json) await ctx.outJson(map([['head', head]]));
      else await ctx.out(head);
    }));

  program
    .command('checkout')
    .description('materialise a state into a new or empty folder')
    .argument('<state>', 'state ID, prefix or HEAD')
    .requiredOption('--into <dir>', 'target folder, new or empty (required)')
    .action(action(async (ctx, ref: string, opts: { into: string }) => {
      refuseEmptyPath(opts.into, '--into');
      const repo = await ctx.repo();
      const state = await repo.getTyped(await repo.resolve(ref), 'state');
      const dir = ctx.path(opts.into, '--into');
      if ((await readdirIfPresent(dir, '--into')).length > 0) throw usage(`--into ${dir} is not empty; checkout writes only into a new or empty folder`);
      const written = await checkout(dir, state.data.files, (id) => repo.artifactContent(id));
      if (!written.ok) throw written.error;
      if (ctx.json) await ctx.outJson(map([['path', dir], ['files', written.value]]));
      else await ctx.out(oneLine(dir));
    }));

  program
    .command('report')
    .description('record a reported (v1) evidence; nothing is run')
    .requiredOption('--kind <kind>', 'kind of check, e.g. test, build, lint (required)')
    .requiredOption('--command <text>', 'the command the reporter says was run (required)')
    .addOption(new Option('--result <result>', 'reported result (required)').choices(['pass', 'fail', 'unknown']).makeOptionMandatory())
    .option('--state <id>', 'state the evidence is about (default HEAD)')
    .option('--reporter <name>', 'who reports (default the OS user name)')
    .option('--platform <text>', 'platform (default os/arch of this machine)')
    .option('--cwd <path>', 'repository-relative folder the command ran in', '.')
    .option('--notes <text>', 'free text: environment, versions, timing, output', '')
    .option('--operation <id>', 'a producing operation of the state (repeatable)', collect, [])
    .option('--no-operations', 'record no operations')
    .option('--recorded-at <time>', 'recording time, UTC with nine fractional digits (default now)')
    .action(action(async (ctx, opts: {
      kind: string; command: string; result: EvidenceResult; state?: string; reporter?: string; platform?: string; cwd: string;
      notes: string; operation: string[]; operations: boolean; recordedAt?: string;
    }) => {
      // Both would leave one of them silently unheeded.
      if (opts.operation.length > 0 && !opts.operations) throw usage('--operation and --no-operations cannot be used together');
      const repo = await ctx.repo();
      const stateId = await repo.resolve(opts.state ?? 'HEAD');
      const state = await repo.getTyped(stateId, 'state');
      if (opts.cwd !== '.') {
        const problem = pathProblem(opts.cwd);
        if (problem !== undefined) {
          const why = opts.cwd.startsWith('/') ? 'is absolute' : PATH_PROBLEM_TEXT[problem];
          throw usage(`--cwd must be . or a relative path inside the project: ${quoted(opts.cwd)} ${why}`);
        }
      }
      let operations: Id[] = [];
      if (opts.operation.length > 0) operations = await ctx.resolveIds(opts.operation);
      else if (opts.operations) operations = [...state.data.operations];
      let reporter = opts.reporter;
      if (reporter === undefined) {
        try {
          reporter = userInfo().username;
        } catch {
          reporter = '';
        }
        // Only the OS default falls back to 'unknown' (D22); an explicit empty --reporter is refused like --kind ''.
        if (!isNonemptyText(reporter)) reporter = 'unknown';
      }
      const evidence: EvidenceV1 = {
        type: 'evidence',
        version: 1,
        data: {
          cwd: opts.cwd,
          kind: requireText(opts.kind, '--kind'),
          notes: opts.notes,
          state: stateId,
          result: opts.result,
          command: requireText(opts.command, '--command'),
          platform: requireText(opts.platform ?? platformName(), '--platform'),
          reporter: requireText(reporter, '--reporter'),
          operations,
          provenance: 'reported',
          recorded_at: opts.recordedAt === undefined ? ctx.now() : parseTime(opts.recordedAt, '--recorded-at'),
        },
      };
      await printMade(ctx, await store(ctx, evidence), evidence);
    }));

  program
    .command('run')
    .description('run ARGV (no shell) against a materialised state and store an executed (v2) evidence')
    .option('--state <id>', 'state to evaluate (default HEAD)')
    .option('--kind <kind>', 'kind of check', 'command')
    .option('--timeout <duration>', 'deadline: an integer with ns, us, ms, s, m or h, seconds without a unit (default from config)')
    .option('--output-limit <bytes>', 'bytes kept per stream: an integer with an optional K, M or G (powers of 1024; default from config)')
    .option('--no-operations', 'record no operations')
    .option('--tee', "also copy the command's output live")
    .option('--keep', 'keep the evaluation folder and print its path')
    .argument('<argv...>', 'the command and its arguments (after --)')
    .action(action(async (ctx, argv: string[], opts: {
      state?: string; kind: string; timeout?: string; outputLimit?: string; operations: boolean; tee?: boolean; keep?: boolean;
    }) => {
      const repo = await ctx.repo();
      if (!isNonemptyText(argv[0] ?? '')) throw usage('the command name must not be empty');
      const stateId = await repo.resolve(opts.state ?? 'HEAD');
      const controller = new AbortController();
      const unsubscribe = ctx.io.onSignal((signal) => controller.abort(signal));
      let outcome;
      try {
        outcome = await runEvidence(repo, {
          stateId,
          argv,
          kind: requireText(opts.kind, '--kind'),
          timeoutNs: opts.timeout === undefined ? repo.config.run.timeoutNs : parseDuration(opts.timeout),
          outputLimit: opts.outputLimit === undefined
            ? repo.config.run.outputLimit
            : parseSize(opts.outputLimit, repo.config.maxObjectBytes - ARTIFACT_ENVELOPE_ROOM),
          withOperations: opts.operations,
          keep: opts.keep === true,
          signal: controller.signal,
          ...(opts.tee === true ? { tee: { stdout: ctx.io.stdout, stderr: ctx.io.stderr } } : {}),
        });
      } finally {
        unsubscribe();
      }
      const d = outcome.evidence.data;
      if (ctx.json) await ctx.outObject(outcome.id, outcome.evidence);
      else {
        await ctx.out(`evidence ${outcome.id}\nresult ${d.result} (termination ${d.termination}, exit ${d.exit_code ?? '-'}, workspace ${d.workspace})`);
        // The result line cannot say why the result is unknown (a typo in the name,
        // which signal, which stream, what made the workspace unreadable); the
        // evidence holds the reason, so name it here too. A timeout or a Ctrl-C
        // the line already says.
        const notes: string[] = [];
        if (d.termination === 'start_error') notes.push(`the command did not start: ${d.error}`);
        if (d.termination === 'signaled' || d.termination === 'capture_error') notes.push(`result unknown: ${d.error}`);
        if (d.workspace === 'unknown') notes.push(`workspace unknown: ${d.workspace_error}`);
        for (const note of notes) await write(ctx.io.stderr, `aip: warning: ${oneLine(note)}\n`);
      }
      if (outcome.removalError !== undefined) {
        await write(ctx.io.stderr, `aip: warning: the evaluation folder is left behind: ${oneLine(outcome.removalError)}\n`);
      }
      if (outcome.evaluationDir !== undefined) {
        // The path alone, as spec §8 step 11 words it, so a script can take the last line as it is.
        // A control character in it is escaped, as in every text line (D42).
        await write(ctx.json ? ctx.io.stderr : ctx.io.stdout, `${oneLine(outcome.evaluationDir)}\n`);
      }
      ctx.exitCode = d.termination === 'cancelled' ? EXIT.cancelled : d.result === 'pass' ? EXIT.ok : d.result === 'fail' ? EXIT.negative : EXIT.unknownResult;
    }));

  program
    .command('decide')
    .description('record a decision')
    .requiredOption('--question <text>', 'the question decided (required)')
    .requiredOption('--decision <text>', 'what was decided (required)')
    .requiredOption('--rationale <text>', 'why (required)')
    .option('--alternative <text>', 'an alternative considered (repeatable, order kept)', collect, [])
    .option('--related <id>', 'a related object (repeatable)', collect, [])
    .option('--created-at <time>', 'creation time, UTC with nine fractional digits (default now)')
    .action(action(async (ctx, opts: { question: string; decision: string; rationale: string; alternative: string[]; related: string[]; createdAt?: string }) => {
      const decision: DecisionV1 = {
        type: 'decision',
        version: 1,
        data: {
          related: await ctx.resolveIds(opts.related),
          decision: requireText(opts.decision, '--decision'),
          question: requireText(opts.question, '--question'),
          rationale: requireText(opts.rationale, '--rationale'),
          created_at: opts.createdAt === undefined ? ctx.now() : parseTime(opts.createdAt, '--created-at'),
          alternatives: opts.alternative,
        },
      };
      await printMade(ctx, await store(ctx, decision), decision);
    }));

  program
    .command('log')
    .description('states from STATE (default HEAD) back to the root, newest first')
    .argument('[state]', 'state ID, prefix or HEAD')
    .action(action(async (ctx, ref: string | undefined) => {
      const repo = await ctx.repo();
      let id: Id | undefined = await repo.resolve(ref ?? 'HEAD');
      let child: Id | undefined; // the state whose parent `id` is
      // Text goes out state by state, so `aip log | head` answers at once on a
      // long history; a broken chain ends it with the error after the states
      // already shown (as git log does). JSON stays one document: all or nothing.
      const entries: JsonTree[] = [];
      while (id !== undefined) {
        const state: StateV1 = await repo.getTyped(id, 'state', child === undefined ? undefined : `${child}: data.parents[0]`);
        const evidence: LogEvidence[] = [];
        for (const ref of await repo.reverse(id, { type: 'evidence', field: 'state' })) {
          // Confirmed against the object itself, so a wrong index line cannot turn up here.
          if (ref.object.type !== 'evidence') continue;
          const d = ref.object.data;
          evidence.push({ id: ref.source, kind: d.kind, result: d.result, provenance: d.provenance });
        }
        const operationId = state.data.operations[0];
        let change: LogEntry['change'];
        if (operationId !== undefined) {
          const operation = await repo.getTyped(operationId, 'operation', `${id}: data.operations[0]`);
          const intent = await repo.getTyped(operation.data.intent, 'intent', `${operationId}: data.intent`);
          change = { operation: operationId, intent: operation.data.intent, title: intent.data.title, effects: operation.data.effects.length };
        }
        const entry: LogEntry = { state: id, change, evidence };
        if (ctx.json) entries.push(logEntryJson(entry));
        else await ctx.outLines(logEntryLines(entry));
        child = id;
        id = state.data.parents[0];
      }
      if (ctx.json) await ctx.outJson(map([['states', entries]]));
    }));

  program
    .command('refs')
    .description('objects that reference ID (reverse query over the index)')
    .argument('<id>', 'object ID, prefix or HEAD')
    .action(action(async (ctx, ref: string) => {
      const repo = await ctx.repo();
      const lines = await repo.reverse(await repo.resolve(ref));
      if (ctx.json) {
        await ctx.outJson(map([['refs', lines.map((l) => map([['source', l.source], ['type', l.type], ['version', l.version], ['field', l.field]]))]]));
      } else {
        await ctx.outLines(lines.map((l) => `${l.source} ${l.type}/${l.version} ${l.field}`));
      }
    }));

  program
    .command('export')
    .description('write a bundle: every object (default) or the reference closure of IDs')
    .option('--all', 'every stored object (default without IDs)')
    .option('-o, --output <file>', 'write to FILE instead of stdout (- is stdout, as import reads - as stdin)')
    .argument('[ids...]', 'objects whose closure to export')
    .action(action(async (ctx, refs: string[], opts: { all?: boolean; output?: string }) => {
      refuseEmptyPath(opts.output, '--output');
      const repo = await ctx.repo();
      if (opts.all === true && refs.length > 0) throw usage('give IDs or --all, not both');
      const roots = refs.length === 0 ? undefined : await Promise.all(refs.map((r) => repo.resolve(r)));
      const outputFile = opts.output === '-' ? undefined : opts.output;
      let count: number;
      if (outputFile === undefined) count = await exportBundle(repo, roots, ctx.io.stdout);
      else {
        // Written beside FILE and renamed over it when complete (D28): a failed or
        // interrupted export leaves FILE as it was, or absent (D46).
        count = await writeOutputFile(ctx.path(outputFile, '--output'), (out) => exportBundle(repo, roots, out));
      }
      await write(ctx.io.stderr, `exported ${count} objects\n`);
      // With the bundle in FILE, stdout is free for the one JSON document of 9.1.
      if (ctx.json && outputFile !== undefined) await ctx.outJson(map([['exported', count]]));
    }));

  program
    .command('import')
    .description('import a bundle; every object is verified before it is stored; HEAD does not move')
    .argument('[file]', 'bundle file, or - for stdin')
    .action(action(async (ctx, file: string | undefined) => {
      refuseEmptyPath(file, 'FILE');
      const repo = await ctx.repo();
      const input = file === undefined || file === '-' ? ctx.io.stdin : createReadStream(ctx.path(file, 'FILE'));
      const imported = await importBundle(repo, input).catch((error: unknown) => {
        throw file === undefined || file === '-' ? readingStdin(error) : namingSource(error, file);
      });
      if (!imported.ok) throw imported.error;
      if (ctx.json) await ctx.outJson(map([['imported', imported.value.objects], ['new', imported.value.stored]]));
      else await ctx.out(`imported ${imported.value.objects} objects (${imported.value.stored} new)`);
    }));

  const index = program.command('index').description('the reverse index (a rebuildable cache)');
  index
    .command('rebuild')
    .description('delete and rebuild the reverse index from the objects')
    .action(action(async (ctx) => {
      const count = await (await ctx.repo()).rebuildIndex();
      if (ctx.json) await ctx.outJson(map([['indexed', count]]));
      else await ctx.out(`indexed ${count} objects`);
    }));

  return program;
}

function wantsJson(argv: readonly string[]): boolean {
  const i = argv.indexOf('--');
  const options = i === -1 ? argv : argv.slice(0, i);
  // The last --format wins, as commander parses it: `--format json --format text` is text.
  let format: string | undefined;
  options.forEach((arg, k) => {
    if (arg.startsWith('--format=')) format = arg.slice('--format='.length);
    else if (arg === '--format') format = options[k + 1];
  });
  return format === 'json';
}

function helpFailure(argv: readonly string[]): string {
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') break;
    if (arg === '--repo' || arg === '--format') i++; // their value is not a command word
    else if (!arg.startsWith('-')) words.push(arg);
  }
  const asked = words[words.indexOf('help') + 1];
  return words.includes('help') && asked !== undefined ? `unknown command '${asked}'` : 'missing command';
}

/** The command word (`run`, `show`, ...) before any `--`, if there is one. */
function commandWord(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return undefined;
    if (arg === '--repo' || arg === '--format') i++; // their value is not a command word
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/** `aip run ...` with no `--` on the command line. */
function runWithoutSeparator(argv: readonly string[]): boolean {
  return !argv.includes('--') && commandWord(argv) === 'run';
}

/** Runs `aip` with `argv` (without the node and script paths) and returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const exit = { code: EXIT.ok as number, helpWrites: [] as Promise<void>[] };
  const program = buildProgram(io, exit);
  try {
    if (io.nonUtf8Argument !== undefined) {
      // Node would hand the command U+FFFD in place of the bytes: a different text
      // stored, or a different command run (`aip run -- printf $'\xff'`), than the one given.
      throw usage(`argument ${io.nonUtf8Argument} is not valid UTF-8; aip arguments are text, and the invalid bytes would be replaced by U+FFFD`);
    }
    await program.parseAsync([...argumentsUpToUnknownCommand(program, argv, { helpCommand: true })], { from: 'user' });
    return exit.code;
  } catch (thrown) {
    let error: AipError;
    if (thrown instanceof CommanderError && thrown.exitCode === 0) {
      // --help: its text is output like any other (D27).
      try {
        await Promise.all(exit.helpWrites);
        return EXIT.ok;
      } catch (writeError) {
        error = toAipError(writeError);
      }
    } else if (thrown instanceof CommanderError) {
      // A command group given no subcommand, or `help NAME` for no such command:
      // its help went to stderr; say why.
      let message = thrown.code === 'commander.help' ? helpFailure(argv) : thrown.message.replace(/^error: /, '');
      // `aip run ls -la`: the command's own option was read as one of aip's.
      if (thrown.code === 'commander.unknownOption' && runWithoutSeparator(argv)) {
        message += ' (put the command after --: aip run [options] -- ARGV...)';
      }
      // `aip run` with nothing to run: commander names its internal argument ('argv').
      if (thrown.code === 'commander.missingArgument' && commandWord(argv) === 'run') {
        message = 'no command to run: give it after --: aip run [options] -- ARGV...';
      }
      error = new AipError('usage', message);
    } else error = toAipError(thrown);
    // One line whatever the message names (a path, an argument); the JSON document keeps it exact.
    io.stderr.write(`aip: ${error.code}: ${oneLine(error.message)}\n`);
    if (wantsJson(argv)) io.stdout.write(`${stringifyJson(new Map([['error', new Map([['code', error.code], ['message', error.message]])]]))}\n`);
    return exitCodeFor(error.code);
  }
}

