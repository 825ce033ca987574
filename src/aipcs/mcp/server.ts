// The AIPCS MCP server over the shared tool-server helper: the contract's
// catalogue for tools/list, the contract layer for argument validation (it
// trims and checks in the contract's order, so the helper's generic schema
// pass is off here), and the envelope as every tool result.

import type { Logger } from '../../common/logger.js';
import type { JsonSchema } from '../../common/json-schema.js';
import type { ToolServerOptions } from '../../common/mcp/tool-server.js';
import { INTERNAL_ERROR_ENVELOPE, toToolResult } from '../contract/envelope.js';
import { schemaToPlainJson, type AipcsToolDefinition } from '../contract/tool-catalogue.js';
import { PACKAGE_NAME, PACKAGE_VERSION } from '../version.js';
import type { ToolDispatcher } from './dispatch.js';

export function aipcsServerOptions(tools: readonly AipcsToolDefinition[], dispatch: ToolDispatcher, logger: Logger): ToolServerOptions {
  const internal = toToolResult(INTERNAL_ERROR_ENVELOPE);
  return {
    name: PACKAGE_NAME,
    version: PACKAGE_VERSION,
    logger,
    validateArguments: false,
    // Contract §2.2: exactly these capabilities, and the revisions of the
    // Python SDK line the reference is built on (no 2024-10-07).
    capabilities: { experimental: {}, tools: { listChanged: false } },
    protocolVersions: ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
    // The Python SDK's -32602 answers carry `"data": ""`.
    invalidParamsData: '',
    tools: tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: schemaToPlainJson(tool.inputSchema) as JsonSchema,
      outputSchema: schemaToPlainJson(tool.outputSchema),
    })),
    callTool: async (name, args) => toToolResult(await dispatch(name, args)),
    // Unknown names are answered by the dispatcher (unsupported_operation);
    // these two are reached only if validation were switched on.
    onInvalidArguments: () => internal,
    onUnknownTool: () => internal,
    onUnexpectedError: () => internal,
  };
}
