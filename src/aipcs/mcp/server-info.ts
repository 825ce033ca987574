// The aipcs_server_info result (contract §5.3). Feature flags tell the truth
// about the running profile: the stateless profile has no storage behind it.

import type { JsonObject } from '../../common/json.js';
import { MCP_CONTRACT_VERSION, PACKAGE_NAME, PACKAGE_VERSION } from '../version.js';

export type ProfileKind = 'stateless' | 'persistent';

export function serverInfo(profile: ProfileKind): JsonObject {
  const persistent = profile === 'persistent';
  return {
    server_name: PACKAGE_NAME,
    package_version: PACKAGE_VERSION,
    aipcs_mcp_contract: MCP_CONTRACT_VERSION,
    supported_manifest_versions: [2n],
    transports: ['stdio', 'streamable-http'],
    features: {
      server_info: true,
      manifest_v2_validation: true,
      legacy_v1_importer: true,
      stdio_preflight: true,
      registry_lifecycle: persistent,
      materialisation_lifecycle: persistent,
      record_runtime: persistent,
      discovery_topology: persistent,
    },
    operational_statuses: ['active'],
  };
}
