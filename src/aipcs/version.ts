// Version identifiers reported to clients. PACKAGE_VERSION must equal the
// "version" in package.json (a test checks it); the contract version is fixed.

export const PACKAGE_NAME = 'aipcs';
export const PACKAGE_VERSION = '0.1.0';
export const MCP_CONTRACT_VERSION = '1.2.0';
