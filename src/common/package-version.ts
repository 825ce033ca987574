// The product's version: one package, one number, reported by all three CLIs
// and in MCP serverInfo. Kept equal to package.json's "version" by a test.
export const PACKAGE_VERSION = '0.1.0';
