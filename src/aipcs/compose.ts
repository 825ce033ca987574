// The one composition root of AIPCS: wires configuration, storage adapters,
// application services and the MCP edge for each profile.

import { createLogger } from '../common/logger.js';
import { serveStdio } from '../common/mcp/tool-server.js';
import { renderJson } from '../common/json.js';
import { statelessServerOptions } from './mcp/stateless-server.js';

/** Serves one profile over stdio until stdin closes; returns the exit code. */
export async function serveStdioProfile(profile: string): Promise<number> {
  const logger = createLogger('aipcs');
  if (profile !== 'stateless') {
    process.stderr.write(
      renderJson(
        { ok: false, result: null, error: { code: 'unsupported_operation', message: 'The requested profile is not available in this build.', issues: [], retryable: false } },
        { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'python' },
      ) + '\n',
    );
    return 2;
  }
  await serveStdio(statelessServerOptions(logger));
  return 0;
}
