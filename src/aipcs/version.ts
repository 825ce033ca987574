// Version identifiers reported to clients. PACKAGE_VERSION must equal the
// "version" in package.json (a test checks it); the contract version lives in contract/server-info.ts.

export { SERVER_NAME as PACKAGE_NAME } from './contract/server-info.js';
export { PACKAGE_VERSION } from '../common/package-version.js';
