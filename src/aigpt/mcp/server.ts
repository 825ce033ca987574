// `aigpt server`: the stdio MCP server. Builds the instructions from the
// record tree whenever initialize is answered and serves the tool catalogue
// through the shared tool server, re-reading the config for every operation.
// Owns no file logic; everything goes through MemoryStore.

import type { Readable, Writable } from 'node:stream';
import { abandonStdoutAnswers } from '../../common/mcp/abandoned-stdout.js';
import { RunningCalls, serveStdio, SHUTDOWN_SIGNALS, type StdioServeOptions } from '../../common/mcp/tool-server.js';
import { testAnswerWaitMs } from '../../common/mcp/stdio-transport.js';
import type { Logger } from '../../common/logger.js';
import { standardInput } from '../../common/standard-input.js';
import type { AigptApp } from '../app.js';
import { AigptError } from '../core/errors.js';
import { buildInstructions } from '../core/instructions.js';
import { AIGPT_VERSION, MAX_INPUT_LINE_BYTES, MAX_READ_MEMORY_BYTES } from '../core/limits.js';
import type { MemoryStore } from '../storage/memory-store.js';
import { answerBeforeExit } from './answer-before-exit.js';
import { AIGPT_TOOLS, AigptToolHandler, errorResult } from './tools.js';

/** The instructions text for `initialize` from what is on disk now (spec 5.2). */
export async function instructionsFromStore(store: MemoryStore, warn?: (message: string) => void): Promise<string> {
  let coreText: string | undefined;
  try {
    coreText = (await store.readCore()).text;
  } catch (error) {
    // An unreadable core is left out, as in the reference; read_core reports why.
    // The instructions stay the spec's text, so the owner learns it from stderr:
    // a hand edit that broke the JSON would otherwise silently drop the identity.
    coreText = undefined;
    if (warn !== undefined && error instanceof AigptError) warn(`core record left out of the instructions: ${error.message}`);
  }
  let read;
  try {
    read = await store.readMemories({ maxBytes: MAX_READ_MEMORY_BYTES });
  } catch (error) {
    // An unlistable folder leaves the memories out; read_memory reports why.
    // The status line then counts none, so the owner learns why from stderr,
    // as for the core.
    read = { records: [], skipped: [], selected: 0, notRead: 0 };
    if (warn !== undefined && error instanceof AigptError) warn(`memories left out of the instructions: ${error.message}`);
  }
  return buildInstructions({
    coreText,
    memoryTexts: read.records.map((record) => record.text),
    count: read.selected,
    limit: store.memoryLimit,
    unreadable: read.skipped.length,
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
  const runningCalls = new RunningCalls();
  const gate = answerBeforeExit(
    (io.input ?? standardInput()) as Readable,
    (io.output ?? process.stdout) as Writable,
    MAX_INPUT_LINE_BYTES,
    (message) => logger.warn(message),
    io.answerWaitMs,
    () => runningCalls.any,
  );
  const session = await serveStdio(
    {
      name: 'aigpt',
      version: AIGPT_VERSION,
      // Spec 5.2: the reference's capabilities exactly (tools, nothing else),
      // and it ignores the params of initialize: `"params":{}` or none gets
      // the instructions; only a string protocolVersion is negotiated.
      capabilities: { tools: {} },
      checkInitializeParams: false,
      // Spec 5.2: built fresh for each initialize, from what is on disk then.
      instructions: async () => {
        try {
          return await instructionsFromStore(await stores(), (message) => logger.warn(message));
        } catch (error) {
          // A config that broke after start: tell the agent instead of failing initialize.
          if (error instanceof AigptError) return `[aigpt] ${error.message}`;
          throw error;
        }
      },
      tools: AIGPT_TOOLS,
      logger,
      maxLineBytes: MAX_INPUT_LINE_BYTES,
      // Spec 5.4: a call without a name is an unknown tool named "", and
      // every call gets a result: arguments that are no object (the
      // reference reads no member from them) are missing arguments.
      unnamedToolCall: 'unknown-tool',
      nonObjectArguments: 'absent',
      callTool: (name, args) => handler.call(name, args),
      onInvalidArguments: (tool, issues) => handler.invalidArguments(tool, issues),
      onUnknownTool: (name) => handler.unknownTool(name),
      onUnexpectedError: () => errorResult('internal error'),
    },
    // Ctrl-C or a polite kill ends the session like the end of input: the request being served is answered first.
    {
      input: gate.input,
      output: gate.output,
      shutdownSignals: SHUTDOWN_SIGNALS,
      releaseInput: () => gate.stop(),
      runningCalls,
      ...(io.answerWaitMs === undefined ? {} : { answerWaitMs: io.answerWaitMs }),
    },
  );
  // Answers the client never read, still queued on the real stdout, must not keep the process alive (main.ts ends it).
  if (session.answersAbandoned && io.output === undefined) abandonStdoutAnswers();
  // An input that could not be read (a folder, an fd opened for writing) is no session the client ended.
  if (session.inputError !== undefined) throw new AigptError('read_failed', `cannot read stdin: ${session.inputError}`);
}

/**
 * Test-only: `AIGPT_TEST_ANSWER_WAIT_MS={ms}` shortens both waits for an
 * answer of `aigpt server` (one request holding back the next, 30 s; the end
 * of stdin waiting for the answers still owed, 60 s; neither runs out while a
 * tool call is still being served), so a test of a client
 * that reads no answers does not take minutes. Unset in normal use.
 */
export const ANSWER_WAIT_ENV = 'AIGPT_TEST_ANSWER_WAIT_MS';

/** The shortened answer wait ANSWER_WAIT_ENV asks for, or undefined (the defaults). */
export function testAnswerWait(env: Readonly<Record<string, string | undefined>>): number | undefined {
  return testAnswerWaitMs(env, ANSWER_WAIT_ENV);
}
