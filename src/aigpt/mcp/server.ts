// `aigpt server`: the stdio MCP server. Builds the instructions from the
// record tree at start and serves the tool catalogue through the shared tool
// server. Owns no file logic; everything goes through MemoryStore.

import { serveStdio, type StdioServeOptions } from '../../common/mcp/tool-server.js';
import type { Logger } from '../../common/logger.js';
import { buildInstructions } from '../instructions.js';
import { AIGPT_VERSION, MAX_INPUT_LINE_BYTES } from '../limits.js';
import type { MemoryStore } from '../memory-store.js';
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
    read = await store.readMemories();
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

export async function runServer(store: MemoryStore, logger: Logger, io: StdioServeOptions = {}): Promise<void> {
  const handler = new AigptToolHandler(store);
  // Built once per process: a stdio server answers exactly one initialize.
  const instructions = await instructionsFromStore(store);
  await serveStdio(
    {
      name: 'aigpt',
      version: AIGPT_VERSION,
      instructions,
      tools: AIGPT_TOOLS,
      logger,
      maxLineBytes: MAX_INPUT_LINE_BYTES,
      callTool: (name, args) => handler.call(name, args),
      onInvalidArguments: (tool, issues) => handler.invalidArguments(tool, issues),
      onUnknownTool: (name) => handler.unknownTool(name),
      onUnexpectedError: () => errorResult('internal error'),
    },
    io,
  );
}
