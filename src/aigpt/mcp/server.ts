// `aigpt server`: the stdio MCP server. Builds the instructions from the
// record tree whenever initialize is answered and serves the tool catalogue
// through the shared tool server, re-reading the config for every operation.
// Owns no file logic; everything goes through MemoryStore.

import type { Readable as NodeReadable, Writable as NodeWritable } from 'node:stream';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { LosslessStdioTransport } from '../../common/mcp/stdio-transport.js';
import { createToolServer, type StdioServeOptions, type ToolServerOptions } from '../../common/mcp/tool-server.js';
import type { Logger } from '../../common/logger.js';
import type { AigptApp } from '../app.js';
import { AigptError } from '../errors.js';
import { buildInstructions } from '../instructions.js';
import { AIGPT_VERSION, MAX_INPUT_LINE_BYTES, MAX_READ_MEMORY_BYTES } from '../limits.js';
import type { MemoryStore } from '../memory-store.js';
import { answerBeforeExit } from './answer-before-exit.js';
import { AIGPT_TOOLS, AigptToolHandler, errorResult } from './tools.js';

/** The instructions text for `initialize` from what is on disk now (spec 5.2). */
export async function instructionsFromStore(store: MemoryStore): Promise<string> {
  let coreText: string | undefined;
  try {
    coreText = (await store.readCore()).text;
  } catch {
    // An unreadable core is left out, as in the reference; read_core reports why.
    coreText = undefined;
  }
  let read;
  try {
    read = await store.readMemories({ maxBytes: MAX_READ_MEMORY_BYTES });
  } catch {
    // An unlistable folder leaves the memories out; read_memory reports why.
    read = { records: [], skipped: [], selected: 0, notRead: 0 };
  }
  return buildInstructions({
    coreText,
    memoryTexts: read.records.map((record) => record.text),
    count: read.selected,
    limit: store.memoryLimit,
    unreadable: read.skipped.length - read.notRead,
    notRead: read.notRead,
  });
}

/**
 * Serves until stdin ends and every request read before the end is answered
 * (spec 5.1). Recovery ran at start (the caller opened the app as a writer);
 * from then on readers only read, and writes recover first.
 */
export async function runServer(app: AigptApp, logger: Logger, io: StdioServeOptions = {}): Promise<void> {
  const stores = async (): Promise<MemoryStore> => (await app.current()).store;
  const handler = new AigptToolHandler(stores);
  const gate = answerBeforeExit(
    (io.input ?? process.stdin) as NodeReadable,
    (io.output ?? process.stdout) as NodeWritable,
    MAX_INPUT_LINE_BYTES,
    (message) => logger.warn(message),
  );
  await serveLenientStdio(
    {
      name: 'aigpt',
      version: AIGPT_VERSION,
      // Spec 5.2: the reference's capabilities exactly (tools, nothing else).
      capabilities: { tools: {} },
      // Spec 5.2: built fresh for each initialize, from what is on disk then.
      instructions: async () => {
        try {
          return await instructionsFromStore(await stores());
        } catch (error) {
          // A config that broke after start: tell the agent instead of failing initialize.
          if (error instanceof AigptError) return `[aigpt] ${error.message}`;
          throw error;
        }
      },
      tools: AIGPT_TOOLS,
      logger,
      maxLineBytes: MAX_INPUT_LINE_BYTES,
      // Spec 5.4: a call without a name is an unknown tool named "".
      unnamedToolCall: 'unknown-tool',
      callTool: (name, args) => handler.call(name, args),
      onInvalidArguments: (tool, issues) => handler.invalidArguments(tool, issues),
      onUnknownTool: (name) => handler.unknownTool(name),
      onUnexpectedError: () => errorResult('internal error'),
    },
    { input: gate.input, output: gate.output },
  );
}

/**
 * Spec 5.2: the reference ignores the params of `initialize`, so a client
 * that sends `"params":{}` or no params at all gets its instructions. The
 * shared tool server checks them against the SDK's schema (-32602 for a
 * missing clientInfo); here they are reduced to the one member the product
 * uses, the requested protocol version, before that check: a string is
 * negotiated as usual, anything else is offered the latest revision.
 */
export function lenientInitialize(request: JSONRPCRequest): JSONRPCRequest {
  const params: unknown = request.params;
  const requested = typeof params === 'object' && params !== null ? (params as Record<string, unknown>)['protocolVersion'] : undefined;
  return {
    ...request,
    params: {
      protocolVersion: typeof requested === 'string' ? requested : '',
      capabilities: {},
      clientInfo: { name: '', version: '' },
    },
  };
}

/** The shared tool server over the stdio transport, with the lenient initialize above. */
async function serveLenientStdio(options: ToolServerOptions & { readonly logger: Logger }, io: { input: NodeReadable; output: NodeWritable }): Promise<void> {
  const { server, lossless } = createToolServer(options);
  const strict = server.fallbackRequestHandler;
  if (strict === undefined) throw new Error('the shared tool server has no request handler');
  server.fallbackRequestHandler = (request, extra) => strict(request.method === 'initialize' ? lenientInitialize(request) : request, extra);
  const transport = new LosslessStdioTransport({
    input: io.input,
    output: io.output,
    lossless,
    logger: options.logger,
    ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }),
  });
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  server.onerror = () => options.logger.warn('an MCP protocol error was ignored');
  await server.connect(transport);
  await closed;
}
