// The MCP server helper shared by the systems: one tool catalogue drives both
// tools/list and argument validation, and every call's arguments are checked
// against the tool's schema (additionalProperties: false) before its handler
// runs. Built on the SDK's low-level Server; serves stdio here, HTTP elsewhere.
// It answers initialize, ping, tools/list and tools/call itself, so malformed
// params get a short -32602 instead of the SDK's dump of its validation issues.

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  LATEST_PROTOCOL_VERSION,
  ListToolsRequestSchema,
  PingRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
  type InitializeResult,
  type JSONRPCRequest,
  type ServerResult,
} from '@modelcontextprotocol/sdk/types.js';
import { isPlainObject, withExactNumberStandIns, type JsonObject, type JsonValue } from '../json.js';
import { validateJsonSchema, type JsonSchema, type SchemaIssue } from '../json-schema.js';
import { createLogger, type Logger } from '../logger.js';
import { abandonStdoutAnswers } from './abandoned-stdout.js';
import { LosslessArguments } from './lossless-arguments.js';
import { LosslessStdioTransport } from './stdio-transport.js';
import { standardInput } from '../standard-input.js';

export type { JsonSchema, SchemaIssue } from '../json-schema.js';

export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly outputSchema?: Record<string, unknown>;
}

export interface ToolCallResult {
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface ToolServerOptions {
  readonly name: string;
  readonly version: string;
  /** The initialize instructions: a fixed text, or a function asked afresh for every initialize request. */
  readonly instructions?: string | (() => Promise<string>);
  readonly tools: readonly ToolDefinition[];
  callTool(name: string, args: JsonObject): Promise<ToolCallResult>;
  onInvalidArguments(tool: ToolDefinition, issues: readonly SchemaIssue[]): ToolCallResult | Promise<ToolCallResult>;
  onUnknownTool(name: string): ToolCallResult | Promise<ToolCallResult>;
  onUnexpectedError(error: unknown): ToolCallResult;
  /**
   * How a tools/call whose `params.name` is missing or not a string is
   * answered: JSON-RPC -32602 (default), or as an unknown tool named "".
   */
  readonly unnamedToolCall?: 'invalid-params' | 'unknown-tool';
  /**
   * How a tools/call whose `arguments` is not an object (an array, a string)
   * is answered: JSON-RPC -32602 (default), or run as a call without
   * arguments, whose tool then says what it is missing (stdio only).
   */
  readonly nonObjectArguments?: 'invalid-params' | 'absent';
  /** Normalises arguments (for example trimming strings) before validation. */
  prepareArguments?(tool: ToolDefinition, args: JsonObject): JsonObject;
  /**
   * Whether the helper validates arguments against the input schema (default
   * true). A system whose contract layer validates against the same schemas
   * itself (AIPCS) turns it off and receives every call, unknown names too.
   */
  readonly validateArguments?: boolean;
  /**
   * Protocol revisions answered in kind, latest first (default: the SDK's
   * list); any other requested revision is offered the first.
   */
  readonly protocolVersions?: readonly string[];
  /** Server capabilities; default `{ tools: { listChanged: false } }` (tools only, nothing unimplemented). */
  readonly capabilities?: Record<string, object>;
  /** Longest accepted input line on stdio (default 8 MiB); longer requests get -32600. */
  readonly maxLineBytes?: number;
  /**
   * The data member of every -32602 answer (none when undefined). The Python
   * SDK answers `"data": ""`; AIPCS, whose reference is built on it, says so.
   */
  readonly invalidParamsData?: string;
  /**
   * Whether `initialize` reads its params at all (default true): a server
   * whose reference ignores them (aigpt) answers `"params":{}` or none, and
   * negotiates only a string protocolVersion, offering the latest otherwise.
   */
  readonly checkInitializeParams?: boolean;
  readonly logger?: Logger;
  /** Told when the handler of a tools/call request has ended, by request id (the stdio transport's bound). */
  readonly onCallSettled?: (id: string | number) => void;
}

export interface ToolServer {
  readonly server: Server;
  readonly lossless: LosslessArguments;
  /** Whether it says when each call's handler ends (it was given onCallSettled). */
  readonly reportsSettledCalls: boolean;
  /** The data member of -32602 answers the transports give themselves. */
  readonly invalidParamsData?: string;
}

/** A JSON-RPC error with a fixed message (the SDK's McpError prefixes its message with the code). */
class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    /** Sent as the error's data member when defined (the SDK copies a `data` property). */
    readonly data?: string,
  ) {
    super(message);
  }
}

const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;
const INTERNAL_ERROR = -32603;
/** The same short text the transports use for non-object arguments; it echoes nothing. */
const INVALID_PARAMS_MESSAGE = 'Invalid request parameters';

interface SafeParser {
  safeParse(value: unknown): { success: boolean };
}

function checkParams(schema: SafeParser, request: JSONRPCRequest, data: string | undefined): void {
  if (!schema.safeParse(request).success) throw new JsonRpcError(INVALID_PARAMS, INVALID_PARAMS_MESSAGE, data);
}

/**
 * The Python SDK types `protocolVersion` as `str | int` and answers an
 * integer with its latest revision; the TypeScript schema takes text only.
 * An initialize's integer is therefore read as text (the other fields as
 * they are), so both transports offer the latest revision.
 */
export function integerVersionAsText(message: unknown): unknown {
  if (!isPlainObject(message) || message['method'] !== 'initialize') return message;
  const params = message['params'];
  if (!isPlainObject(params)) return message;
  const version = params['protocolVersion'];
  if (typeof version !== 'number' || !Number.isInteger(version)) return message;
  return { ...message, params: { ...params, protocolVersion: String(version) } };
}

/** Builds an SDK Server whose tools/list and tools/call come from one catalogue. */
export function createToolServer(options: ToolServerOptions): ToolServer {
  const logger = options.logger ?? createLogger(options.name);
  const capabilities = options.capabilities ?? { tools: { listChanged: false } };
  const protocolVersions = options.protocolVersions ?? SUPPORTED_PROTOCOL_VERSIONS;
  const serverInfo = { name: options.name, version: options.version };
  const invalidParamsData = options.invalidParamsData;
  const server = new Server(serverInfo, { capabilities });
  const lossless = new LosslessArguments();
  const byName = new Map(options.tools.map((tool) => [tool.name, tool]));
  const listing = options.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
  }));

  // Synchronous unless the instructions are a function: an answer built in
  // the same turn as the other methods' leaves in arrival order, so a client
  // that writes initialize and its first requests at once (printf … | serve)
  // reads the initialize answer first, as from the Python SDK.
  const initialize = (request: JSONRPCRequest): InitializeResult | Promise<InitializeResult> => {
    let requested: unknown;
    if (options.checkInitializeParams === false) {
      requested = typeof request.params === 'object' && request.params !== null ? (request.params as Record<string, unknown>)['protocolVersion'] : undefined;
    } else {
      const parsed = InitializeRequestSchema.safeParse(integerVersionAsText(request));
      if (!parsed.success) throw new JsonRpcError(INVALID_PARAMS, INVALID_PARAMS_MESSAGE, invalidParamsData);
      // An integer, read as text, is never a revision we speak: the latest is offered below.
      requested = parsed.data.params.protocolVersion;
    }
    // The SDK's negotiation: the client's revision when supported, else the latest.
    const result = (instructions: string | undefined): InitializeResult => ({
      protocolVersion: typeof requested === 'string' && protocolVersions.includes(requested) ? requested : (protocolVersions[0] ?? LATEST_PROTOCOL_VERSION),
      capabilities,
      serverInfo,
      ...(instructions === undefined ? {} : { instructions }),
    });
    const build = options.instructions;
    if (typeof build !== 'function') return result(build);
    return (async () => {
      try {
        return result(await build());
      } catch {
        logger.error('the initialize instructions could not be built');
        throw new JsonRpcError(INTERNAL_ERROR, 'Internal error');
      }
    })();
  };

  const callTool = async (request: JSONRPCRequest): Promise<CallToolResult> => {
    try {
      return await serveCall(request);
    } finally {
      options.onCallSettled?.(request.id);
    }
  };

  const serveCall = async (request: JSONRPCRequest): Promise<CallToolResult> => {
    // Taken first, so nothing is left behind whatever the outcome.
    const taken = lossless.take(request.params?.['arguments']);
    const rawName: unknown = request.params?.['name'];
    let result: ToolCallResult;
    try {
      if (typeof rawName !== 'string') {
        if (options.unnamedToolCall !== 'unknown-tool') throw new JsonRpcError(INVALID_PARAMS, INVALID_PARAMS_MESSAGE, invalidParamsData);
        result = await options.onUnknownTool('');
      } else {
        checkParams(CallToolRequestSchema, request, invalidParamsData);
        if (taken.kind === 'dropped') {
          // More calls waited to start than the bound holds (a burst read at
          // once): this one's arguments are gone, and it must not run with
          // any others. Answered as an unexpected failure; nothing echoed.
          logger.warn('a tool call was refused: too many calls were waiting to start');
          result = options.onUnexpectedError(new Error('tool call arguments dropped'));
        } else {
          result = await dispatch(rawName, taken.kind === 'found' ? taken.args : liftPlainArguments(request.params?.['arguments'] ?? {}));
        }
      }
    } catch (error) {
      if (error instanceof JsonRpcError) throw error;
      // Only a code path bug gets here; the detail stays out of every channel.
      logger.error('a tool call failed unexpectedly');
      result = options.onUnexpectedError(error);
    }
    return toSdkResult(result);
  };

  const dispatch = async (name: string, args: JsonObject): Promise<ToolCallResult> => {
    const tool = byName.get(name);
    if (options.validateArguments === false) return options.callTool(name, args);
    if (!tool) return options.onUnknownTool(name);
    const prepared = options.prepareArguments ? options.prepareArguments(tool, args) : args;
    const issues = validateJsonSchema(tool.inputSchema, prepared);
    return issues.length > 0 ? options.onInvalidArguments(tool, issues) : options.callTool(name, prepared);
  };

  // Every method is answered here, where the params are checked before use;
  // the SDK's own initialize and ping handlers would report a params problem
  // as its validation issues. (Its initialize also records the client's
  // capabilities, which only matter for requests to the client: none are sent.)
  server.removeRequestHandler('initialize');
  server.removeRequestHandler('ping');
  server.fallbackRequestHandler = async (request): Promise<ServerResult> => {
    switch (request.method) {
      case 'initialize':
        return initialize(request);
      case 'ping':
        checkParams(PingRequestSchema, request, invalidParamsData);
        return {};
      case 'tools/list':
        checkParams(ListToolsRequestSchema, request, invalidParamsData);
        return { tools: listing } as never;
      case 'tools/call':
        return callTool(request);
      default:
        throw new JsonRpcError(METHOD_NOT_FOUND, 'Method not found');
    }
  };

  return { server, lossless, reportsSettledCalls: options.onCallSettled !== undefined, ...(invalidParamsData === undefined ? {} : { invalidParamsData }) };
}

/**
 * The SDK's form of a result. Its serialisers call JSON.stringify, which
 * would round integers beyond 2^53 and write the float 1.0 as `1`: numbers of
 * structuredContent travel as stand-ins, which both transports write back
 * exactly, so that it parses to what the text item parses to.
 */
function toSdkResult(result: ToolCallResult): CallToolResult {
  return {
    content: result.content,
    ...(result.structuredContent === undefined ? {} : { structuredContent: withExactNumberStandIns(result.structuredContent as JsonValue) as Record<string, unknown> }),
    ...(result.isError === undefined ? {} : { isError: result.isError }),
  };
}

/** Arguments that reached us without the lossless path: integral numbers become integers. */
function liftPlainArguments(value: unknown): JsonObject {
  const lift = (v: unknown): JsonValue => {
    if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : v;
    if (Array.isArray(v)) return v.map(lift);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, m]) => [k, lift(m)]));
    }
    return v as JsonValue;
  };
  return lift(value) as JsonObject;
}

export interface StdioServeOptions {
  readonly input?: NodeJS.ReadableStream;
  readonly output?: NodeJS.WritableStream;
  /**
   * Signals that end the session as the end of input does, instead of by
   * their default action (which ends the process at once: a write already
   * committed would go unanswered, storage stay open). Nothing more is read,
   * the requests already read are answered (for up to SHUTDOWN_GRACE_MS), and
   * serveStdio resolves. A second signal takes its default action, and so
   * does the first once the grace runs out with answers still owed.
   */
  readonly shutdownSignals?: readonly NodeJS.Signals[];
  /**
   * Called once the session has ended (end of input, a shutdown signal, or
   * the client closed our output): releases the input's source, so that the
   * process can end while the client keeps its end open. Without it,
   * the standard input is destroyed when no input was given.
   */
  readonly releaseInput?: () => void;
  /** How long the end of input waits for the answers still owed (ANSWER_WAIT_MS unless set; tests shorten it). */
  readonly answerWaitMs?: number;
  /**
   * Counts the tool calls being served; when given, the end of input waits
   * for as long as one is still at work (the bound above then applies only
   * to answers nothing is serving, or that the client does not read).
   */
  readonly runningCalls?: RunningCalls;
}

/** The number of tool calls being served, so that a wait for answers can tell a call at work from one nobody serves. */
export class RunningCalls {
  private count = 0;

  get any(): boolean {
    return this.count > 0;
  }

  async track<T>(call: () => Promise<T>): Promise<T> {
    this.count++;
    try {
      return await call();
    } finally {
      this.count--;
    }
  }
}

export interface StdioSessionEnd {
  /**
   * The session closed with answers still owed because its wait ran out (a
   * call still running, or a client that reads no answers): answers written
   * but not taken may still be queued on the output.
   */
  readonly answersAbandoned: boolean;
  /** The system code (ENOSPC, EIO) when writing the output failed for another reason than the reader going away. */
  readonly outputError: string | undefined;
  /** The system code (EBADF, EISDIR, EIO) when reading the input failed for another reason than the client going away. */
  readonly inputError: string | undefined;
}

/** How long a shutdown signal waits for the answers owed (as the HTTP listener's shutdown does). */
export const SHUTDOWN_GRACE_MS = 5_000;

/** The signals on which a server ends its session gracefully (Ctrl-C, a polite kill, a closed terminal). */
export const SHUTDOWN_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Serves the catalogue over stdio until the input ends (or a shutdown signal
 * comes); resolves after closing. When answers were abandoned on
 * process.stdout, that is noted (abandoned-stdout.ts): the command then ends
 * the process after its cleanup, as their pending writes would keep it alive.
 */
export async function serveStdio(options: ToolServerOptions, io: StdioServeOptions = {}): Promise<StdioSessionEnd> {
  const logger = options.logger ?? createLogger(options.name);
  const running = io.runningCalls;
  const callTool: ToolServerOptions['callTool'] = running === undefined ? options.callTool : (name, args) => running.track(() => options.callTool(name, args));
  // The transport is made after the server, whose lossless arguments it
  // shares; no call can start before both are connected.
  const settledCalls: { to?: (id: string | number) => void } = {};
  const { server, lossless } = createToolServer({ ...options, callTool, logger, onCallSettled: (id) => settledCalls.to?.(id) });
  const input = (io.input ?? standardInput()) as import('node:stream').Readable;
  const transport = new LosslessStdioTransport({
    input,
    output: (io.output ?? process.stdout) as import('node:stream').Writable,
    lossless,
    logger,
    ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }),
    ...(options.invalidParamsData === undefined ? {} : { invalidParamsData: options.invalidParamsData }),
    ...(options.nonObjectArguments === undefined ? {} : { nonObjectArguments: options.nonObjectArguments }),
    ...(io.answerWaitMs === undefined ? {} : { answerWaitMs: io.answerWaitMs }),
    ...(running === undefined ? {} : { callsRunning: () => running.any }),
  });
  settledCalls.to = transport.callSettled;
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  server.onerror = () => logger.warn('an MCP protocol error was ignored');
  const signals = io.shutdownSignals ?? [];
  let signalled: NodeJS.Signals | undefined;
  /** Lets the signal do what it would have done without us (the process ends now). */
  const raise = (signal: NodeJS.Signals): void => {
    for (const name of signals) process.off(name, onSignal);
    process.kill(process.pid, signal);
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    // The second one takes its default action. (The handler stays until
    // then, so that a write under a lock sees the first signal as handled
    // here: see interrupt-cleanup.ts.)
    if (signalled !== undefined) raise(signal);
    else {
      signalled = signal;
      transport.endInput(SHUTDOWN_GRACE_MS);
    }
  };
  for (const name of signals) process.on(name, onSignal);
  try {
    await server.connect(transport);
    await closed;
  } finally {
    for (const name of signals) process.off(name, onSignal);
    if (io.releaseInput) io.releaseInput();
    else if (io.input === undefined) input.destroy();
  }
  // The grace ran out with answers owed: a call still running, or a client
  // that does not read its answers (their writes would keep the process
  // alive for good). The signal then takes its default action after all.
  if (signalled !== undefined && transport.abandonedAnswers) raise(signalled);
  if (transport.abandonedAnswers && io.output === undefined) abandonStdoutAnswers();
  return { answersAbandoned: transport.abandonedAnswers, outputError: transport.outputError, inputError: transport.inputError };
}
