// aigpt's four MCP tools (spec 5.3-5.5, 6): the published catalogue, argument
// checks, and the exact payload texts. Transport-free: the server wires these
// into the shared tool server; tests call them directly.

import { join } from 'node:path';
import type { JsonObject, JsonValue } from '../../common/json.js';
import type { SchemaIssue, ToolCallResult, ToolDefinition } from '../../common/mcp/tool-server.js';
import { AigptError } from '../core/errors.js';
import { MAX_LISTED_UNREADABLE, MAX_READ_MEMORY_BYTES, MAX_RECORDS_READ } from '../core/limits.js';
import { checkCompressItems, checkMemoryText, COMPRESS_PENDING, JOURNAL_FILE, type MemoryStore } from '../storage/memory-store.js';
import { renderCompact } from '../core/record-format.js';

// The schemas are exactly the reference's (spec 5.3): no additionalProperties,
// so extra arguments are ignored as the reference ignores them.
export const AIGPT_TOOLS: readonly ToolDefinition[] = [
  {
    name: 'read_core',
    description: 'Read the core record: the identity, personality and standing instructions its owner wrote. Takes no arguments.',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'read_memory',
    description: 'Read every memory record, oldest first, as {"count","records"}. Takes no arguments.',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'save_memory',
    description:
      'Save one memory element (one fact or decision) as a new record. Never refused because of the memory limit; ' +
      'the result reports count and limit, and when count exceeds limit you should call compress.',
    inputSchema: {
      type: 'object',
      properties: { content: { type: 'string', description: 'The memory element to store, as markdown text.' } },
      required: ['content'],
    },
  },
  {
    name: 'compress',
    description:
      'Replace the whole memory set: deletes every existing memory record and writes the given items, in order, as the new set. ' +
      'Call it when the record count exceeds the memory limit. Keep facts and decisions, drop outdated or redundant entries, ' +
      'merge related items, resolve contradictions in favour of the newer one, and do not repeat the core text. ' +
      'At most `limit` items are accepted; an empty list clears memory.',
    inputSchema: {
      type: 'object',
      properties: {
        items: { type: 'array', items: { type: 'string' }, description: 'The consolidated memory elements, oldest first.' },
      },
      required: ['items'],
    },
  },
];

/**
 * One text item holding the payload, exactly the spec's result shape (5.4);
 * the count and limit travel in the payloads and the instructions (see
 * docs/decisions-aigpt.md).
 */
function result(payload: JsonValue, isError = false): ToolCallResult {
  const content: ToolCallResult['content'] = [{ type: 'text', text: renderCompact(payload) }];
  return isError ? { content, isError: true } : { content };
}

export function errorResult(message: string): ToolCallResult {
  return result({ error: message }, true);
}

/**
 * Answers the four tools. The store comes afresh for every call (the config
 * is read on every operation, spec 2.4); reads never lock, writes lock.
 */
export class AigptToolHandler {
  constructor(private readonly stores: () => Promise<MemoryStore>) {}

  /** The store for this call, or the error result when the config cannot be used. */
  private async store(): Promise<{ readonly store: MemoryStore } | { readonly failed: ToolCallResult }> {
    try {
      return { store: await this.stores() };
    } catch (error) {
      if (error instanceof AigptError) return { failed: errorResult(error.message) };
      throw error;
    }
  }

  async call(name: string, args: JsonObject): Promise<ToolCallResult> {
    const opened = await this.store();
    if ('failed' in opened) return opened.failed;
    const { store } = opened;
    try {
      switch (name) {
        case 'read_core':
          return await this.readCore(store);
        case 'read_memory':
          return await this.readMemory(store);
        case 'save_memory':
          return await this.saveMemory(store, args['content']);
        case 'compress':
          return await this.compress(store, args['items']);
        default:
          return this.unknownTool(name);
      }
    } catch (error) {
      if (error instanceof AigptError) return errorResult(error.message);
      throw error;
    }
  }

  unknownTool(name: string): ToolCallResult {
    // A lone surrogate (`"\ud800"` in the request) cannot be written back in a
    // payload; U+FFFD stands in for it rather than failing as an internal error.
    return errorResult(`Unknown tool: ${name.toWellFormed()}`);
  }

  invalidArguments(tool: ToolDefinition, _issues: readonly SchemaIssue[]): ToolCallResult {
    // Every schema issue of these two tools is about their one argument.
    const message = tool.name === 'compress' ? 'items must be an array of strings' : 'content must be a string';
    return errorResult(message);
  }

  private async readCore(store: MemoryStore): Promise<ToolCallResult> {
    const core = await store.readCore();
    return result(core.value);
  }

  private async readMemory(store: MemoryStore): Promise<ToolCallResult> {
    const read = await store.readMemories({ maxBytes: MAX_READ_MEMORY_BYTES });
    const payload: JsonObject = {
      count: BigInt(read.records.length),
      records: read.records.map((record) => record.value),
    };
    // Files left unread by the bounds (`notRead`, never named in `skipped`)
    // are one entry naming the folder, not one per file: thousands of paths
    // would flood the agent's context and could push the answer past what an
    // MCP client accepts on one line.
    const unreadable = read.skipped;
    const skipped: JsonValue[] = [];
    // The records are the old and the new set at once (a compress killed
    // while publishing, spec 7.5): an agent compressing from them would bring
    // back what was deleted. A live compress whose switch this read did not
    // catch leaves a whole set, and says nothing.
    if (read.compressMixed) skipped.push({ path: join(store.tree.memoryDir, JOURNAL_FILE), reason: COMPRESS_PENDING });
    if (read.notRead > 0) {
      skipped.push({
        path: store.tree.memoryDir,
        reason: `${read.notRead} oldest memory file(s) not read: beyond the read bound (${MAX_RECORDS_READ} files, ${MAX_READ_MEMORY_BYTES} bytes, newest first)`,
      });
    }
    // Unreadable files are named one by one up to a bound (each entry carries
    // its path twice, a path may be 4 KiB, and up to 10 000 are read), then
    // one entry names the folder with the count of the others.
    const listed = unreadable.slice(0, MAX_LISTED_UNREADABLE);
    skipped.push(...listed.map((skip): JsonValue => ({ path: skip.path, reason: skip.reason })));
    if (unreadable.length > listed.length) {
      skipped.push({
        path: store.tree.memoryDir,
        reason: `${unreadable.length - listed.length} more unreadable memory file(s) not listed (${MAX_LISTED_UNREADABLE} are); aigpt read-memory lists them all`,
      });
    }
    if (skipped.length > 0) payload['skipped'] = skipped;
    return result(payload);
  }

  private async saveMemory(store: MemoryStore, content: JsonValue | undefined): Promise<ToolCallResult> {
    // The schema already guarantees a string; this guards direct callers.
    if (typeof content !== 'string') return errorResult('content must be a string');
    const problem = checkMemoryText(content);
    if (problem !== undefined) return errorResult(problem);
    const saved = await store.saveMemory(content);
    return result({ count: BigInt(saved.count), limit: store.memoryLimit, success: true });
  }

  private async compress(store: MemoryStore, items: JsonValue | undefined): Promise<ToolCallResult> {
    if (!Array.isArray(items) || !items.every((item): item is string => typeof item === 'string')) {
      return errorResult('items must be an array of strings');
    }
    const problem = checkCompressItems(items, store.memoryLimit);
    if (problem !== undefined) return errorResult(problem);
    const done = await store.compress(items);
    return result({ count: BigInt(done.count), limit: store.memoryLimit, success: true });
  }
}
