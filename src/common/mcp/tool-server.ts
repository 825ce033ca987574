// The MCP server helper shared by the systems: one tool catalogue drives both
// tools/list and argument validation, and every call's arguments are checked
// against the tool's schema (additionalProperties: false) before its handler
// runs. Built on the SDK's low-level Server; serves stdio here, HTTP elsewhere.

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { toPlainJson, type JsonObject, type JsonValue } from '../json.js';
import { validateJsonSchema, type JsonSchema, type SchemaIssue } from '../json-schema.js';
import { createLogger, type Logger } from '../logger.js';
import { LosslessArguments } from './lossless-arguments.js';
import { LosslessStdioTransport } from './stdio-transport.js';

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
  readonly instructions?: string;
  readonly tools: readonly ToolDefinition[];
  callTool(name: string, args: JsonObject): Promise<ToolCallResult>;
  onInvalidArguments(tool: ToolDefinition, issues: readonly SchemaIssue[]): ToolCallResult;
  onUnknownTool(name: string): ToolCallResult;
  onUnexpectedError(error: unknown): ToolCallResult;
  /** Normalises arguments (for example trimming strings) before validation. */
  prepareArguments?(tool: ToolDefinition, args: JsonObject): JsonObject;
  /**
   * Whether the helper validates arguments against the input schema (default
   * true). A system whose contract layer validates against the same schemas
   * itself (AIPCS) turns it off and receives every call, unknown names too.
   */
  readonly validateArguments?: boolean;
  /** Server capabilities; default `{ tools: { listChanged: false } }` (tools only, nothing unimplemented). */
  readonly capabilities?: Record<string, object>;
  /** Longest accepted input line on stdio (default 8 MiB); longer requests get -32600. */
  readonly maxLineBytes?: number;
  readonly logger?: Logger;
}

export interface ToolServer {
  readonly server: Server;
  readonly lossless: LosslessArguments;
}

/** Builds an SDK Server whose tools/list and tools/call come from one catalogue. */
export function createToolServer(options: ToolServerOptions): ToolServer {
  const logger = options.logger ?? createLogger(options.name);
  const server = new Server(
    { name: options.name, version: options.version },
    {
      capabilities: options.capabilities ?? { tools: { listChanged: false } },
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    },
  );
  const lossless = new LosslessArguments();
  const byName = new Map(options.tools.map((tool) => [tool.name, tool]));
  const listing = options.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
  }));

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing }) as never);

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const name = request.params.name;
    const args = lossless.take(extra.requestId) ?? liftPlainArguments(request.params.arguments ?? {});
    let result: ToolCallResult;
    try {
      const tool = byName.get(name);
      if (options.validateArguments === false) {
        result = await options.callTool(name, args);
      } else if (!tool) {
        result = options.onUnknownTool(name);
      } else {
        const prepared = options.prepareArguments ? options.prepareArguments(tool, args) : args;
        const issues = validateJsonSchema(tool.inputSchema, prepared);
        result = issues.length > 0 ? options.onInvalidArguments(tool, issues) : await options.callTool(name, prepared);
      }
    } catch (error) {
      // Only a code path bug gets here; the detail stays out of every channel.
      logger.error('a tool call failed unexpectedly');
      result = options.onUnexpectedError(error);
    }
    return toSdkResult(result);
  });

  return { server, lossless };
}

function toSdkResult(result: ToolCallResult): CallToolResult {
  return {
    content: result.content,
    ...(result.structuredContent === undefined ? {} : { structuredContent: toPlainJson(result.structuredContent as JsonValue) as Record<string, unknown> }),
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
}

/** Serves the catalogue over stdio until the input ends; resolves after closing. */
export async function serveStdio(options: ToolServerOptions, io: StdioServeOptions = {}): Promise<void> {
  const logger = options.logger ?? createLogger(options.name);
  const { server, lossless } = createToolServer({ ...options, logger });
  const transport = new LosslessStdioTransport({
    input: (io.input ?? process.stdin) as import('node:stream').Readable,
    output: (io.output ?? process.stdout) as import('node:stream').Writable,
    lossless,
    logger,
    ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }),
  });
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  server.onerror = () => logger.warn('an MCP protocol error was ignored');
  await server.connect(transport);
  await closed;
}
