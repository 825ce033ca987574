// The ServerInfo result of aipcs_server_info (contract §5.3): fixed contract
// facts plus the profile's feature flags. Pure; the package version comes
// from the caller so this module reads nothing.

import type { JsonObject } from '../../common/json.js';

export const AIPCS_MCP_CONTRACT_VERSION = '1.2.0';
export const SERVER_NAME = 'aipcs';

export type ServerProfile = 'stateless' | 'ready';

/**
 * The result object, keys in contract order. The stateless profile reports
 * the four lifecycle/runtime flags false; the ready profile reports all true.
 */
export function serverInfoResult(packageVersion: string, profile: ServerProfile): JsonObject {
  const ready = profile === 'ready';
  return {
    server_name: SERVER_NAME,
    package_version: packageVersion,
    aipcs_mcp_contract: AIPCS_MCP_CONTRACT_VERSION,
    supported_manifest_versions: [2n],
    transports: ['stdio', 'streamable-http'],
    features: {
      server_info: true,
      manifest_v2_validation: true,
      legacy_v1_importer: true,
      stdio_preflight: true,
      registry_lifecycle: ready,
      materialisation_lifecycle: ready,
      record_runtime: ready,
      discovery_topology: ready,
    },
    operational_statuses: ['active'],
  };
}
