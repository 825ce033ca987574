// The MCP edge that only `serve` needs (the SDK, its schema library, the
// HTTP server and the tool catalogue), gathered so that the composition root
// loads it on demand: administration commands such as export and import
// start without parsing any of it.

export { serveStdio, SHUTDOWN_SIGNALS } from '../common/mcp/tool-server.js';
export { testAnswerWaitMs } from '../common/mcp/stdio-transport.js';
export { AIPCS_TOOLS, STATELESS_TOOLS } from './contract/tool-catalogue.js';
export { createDispatcher } from './mcp/dispatch.js';
export { httpExposureAllowed, serveAipcsHttp } from './mcp/http-server.js';
export { aipcsServerOptions } from './mcp/server.js';
