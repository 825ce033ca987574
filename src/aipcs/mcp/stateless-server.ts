// The stateless profile: no storage, one tool (aipcs_server_info). Every
// other tool name answers unsupported_operation, as the contract requires.

import type { ToolDefinition, ToolServerOptions } from '../../common/mcp/tool-server.js';
import type { Logger } from '../../common/logger.js';
import { PACKAGE_NAME, PACKAGE_VERSION } from '../version.js';
import { serverInfo } from './server-info.js';
import { failureResult, successResult } from './tool-results.js';

export const SERVER_INFO_TOOL: ToolDefinition = {
  name: 'aipcs_server_info',
  description: 'Return the public AIPCS MCP capability contract.',
  inputSchema: { type: 'object', properties: {}, required: [], additionalProperties: false },
};

export const UNSUPPORTED_TOOL = failureResult({
  code: 'unsupported_operation',
  message: 'The requested MCP tool is unavailable.',
  issues: [],
  retryable: false,
});

export const INTERNAL_ERROR = failureResult({
  code: 'internal_error',
  message: 'The request could not be completed safely.',
  issues: [],
  retryable: false,
});

export const CONTRACT_VALIDATION_FAILED = failureResult({
  code: 'validation_failed',
  message: 'Request failed public contract validation.',
  issues: [],
  retryable: false,
});

export function statelessServerOptions(logger: Logger): ToolServerOptions {
  return {
    name: PACKAGE_NAME,
    version: PACKAGE_VERSION,
    tools: [SERVER_INFO_TOOL],
    logger,
    callTool: async () => successResult(serverInfo('stateless')),
    // Contract §3.3: server_info with any argument fails with empty issues.
    onInvalidArguments: () => CONTRACT_VALIDATION_FAILED,
    onUnknownTool: () => UNSUPPORTED_TOOL,
    onUnexpectedError: () => INTERNAL_ERROR,
  };
}
