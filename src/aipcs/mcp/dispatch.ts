// Tool calls to application services: parse the arguments into a typed
// command (contract layer), run it, and wrap the outcome in the envelope.
// The one place that knows which service answers which tool.

import type { JsonObject } from '../../common/json.js';
import { envelopeForError, successEnvelope, type Envelope } from '../contract/envelope.js';
import { parseToolRequest } from '../contract/requests/parse-request.js';
import type { ToolCommand } from '../contract/requests/commands.js';
import type { AipcsToolDefinition } from '../contract/tool-catalogue.js';
import type { Application } from '../core/application.js';
import { serverInfoResult } from '../contract/server-info.js';
import { PACKAGE_VERSION } from '../version.js';

export type ToolDispatcher = (name: string, args: JsonObject) => Promise<Envelope>;

async function run(app: Application | null, command: ToolCommand): Promise<JsonObject> {
  if (command.tool === 'aipcs_server_info') return serverInfoResult(PACKAGE_VERSION, app ? 'ready' : 'stateless');
  if (!app) throw new Error('a persistent tool reached the stateless profile');
  const { lifecycle, records, branches, discovery, maintenance } = app;
  switch (command.tool) {
    case 'aipcs_service_seed':
      return lifecycle.seed(command);
    case 'aipcs_service_list':
      return lifecycle.list(command.limit, true);
    case 'aipcs_service_inspect':
      return lifecycle.inspect(command.serviceId);
    case 'aipcs_service_design':
      return lifecycle.design(command);
    case 'aipcs_service_materialise':
      return lifecycle.materialise({ ...command, expectedSchemaVersion: BigInt(command.expectedSchemaVersion) });
    case 'aipcs_service_evolve':
      return lifecycle.evolve({ ...command, expectedSchemaVersion: BigInt(command.expectedSchemaVersion) });
    case 'aipcs_record_create':
      return records.create(command);
    case 'aipcs_record_get':
      return records.get(command.serviceId, command.entityName, command.recordId);
    case 'aipcs_record_list':
      return records.list({ serviceId: command.serviceId, entityName: command.entityName, limit: command.page.limit, cursor: command.page.cursor, branch: command.branchScope });
    case 'aipcs_record_search':
      return records.list({
        serviceId: command.serviceId,
        entityName: command.entityName,
        limit: command.page.limit,
        cursor: command.page.cursor,
        branch: command.branchScope,
        filters: command.filters,
      });
    case 'aipcs_record_update':
      return records.update(command);
    case 'aipcs_record_delete':
      return records.delete(command);
    case 'aipcs_record_history':
      return records.history({ serviceId: command.serviceId, entityName: command.entityName, recordId: command.recordId, limit: command.page.limit, cursor: command.page.cursor });
    case 'aipcs_bootstrap':
      return discovery.bootstrap(command);
    case 'aipcs_service_summary':
      return discovery.summary(command);
    case 'aipcs_branch_create':
      return branches.create(command);
    case 'aipcs_branch_list':
      return branches.list({ ...command, limit: command.page.limit, cursor: command.page.cursor });
    case 'aipcs_branch_update':
      return branches.update(command);
    case 'aipcs_branch_assign_records':
      return branches.assign(command);
    case 'aipcs_maintenance_scan':
      return maintenance.scan(command);
  }
}

/** Told of every failure of a parsed call to a known tool; argument refusals are not (the client gets its envelope either way). */
export type ToolFailureObserver = (tool: string, error: unknown) => void;

/** Builds the dispatcher for the tools a profile exposes. */
export function createDispatcher(app: Application | null, tools: readonly AipcsToolDefinition[], onFailure?: ToolFailureObserver): ToolDispatcher {
  const available = new Set(tools.map((tool) => tool.name));
  return async (name, args) => {
    const parsed = parseToolRequest(name, args, { available });
    if (!parsed.ok) return envelopeForError(parsed.error);
    try {
      return successEnvelope(await run(app, parsed.command));
    } catch (error) {
      onFailure?.(parsed.command.tool, error);
      return envelopeForError(error);
    }
  };
}
