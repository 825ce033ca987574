// Discovery (contract §8.1, §8.2): the shape-only bootstrap, built from
// registry projections alone (it never opens, allocates or migrates a service
// store), and the bounded service summary over one admitted store. Manifest
// facts come from the derived model, never from the raw document.

import type { JsonObject } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import { deriveModel, type DerivedEntity } from '../contract/manifest/derived-model.js';
import { branchDocument } from './branches.js';
import type { LifecycleService } from './lifecycle.js';
import type { FacetCount, RegistryPort, ServiceDataPort } from './ports.js';
import { publicFields, recordDocument } from './record-rules.js';
import { dataFailure } from './data-unit.js';
import { layoutOf } from './records.js';
import { TextBudget } from './text-budget.js';

export interface DiscoveryDependencies {
  readonly lifecycle: LifecycleService;
  readonly registry: RegistryPort;
  readonly data: ServiceDataPort;
  readonly principalId: string;
}

export interface BootstrapCommand {
  /** 1..100 service cards (default 100). */
  readonly limit: number;
}

export interface SummaryCommand {
  readonly serviceId: string;
  /** 0..3 sample records per entity. */
  readonly sample: number;
}

export const MAX_BOOTSTRAP_CARDS = 100;
export const MAX_FACET_VALUES = 20;
export const MAX_BRANCH_CARDS = 100;
export const MAX_SAMPLES = 3;

const clamp = (value: number, min: number, max: number): number => Math.min(Math.max(Math.trunc(value), min), max);

function entityNamesOf(document: unknown): string[] {
  const entities = (document as { entities?: unknown } | null)?.entities;
  if (!Array.isArray(entities)) return [];
  const names = entities.map((entity) => (entity as { name?: unknown }).name).filter((name): name is string => typeof name === 'string');
  return names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function affordances(entity: DerivedEntity): JsonObject {
  return {
    entity_name: entity.name,
    filter_modes: entity.filterableFields.map((field) => ({
      field_name: field.name,
      mode: field.filterMode,
      value_shape: field.filterMode === 'membership' ? 'single_string_member' : 'scalar',
      facet: field.facet,
    })),
  };
}

function authorityAvailability(entity: DerivedEntity): JsonObject {
  const authority = entity.authority;
  return {
    entity_name: entity.name,
    provenance_fields: [...authority.provenanceFields],
    source_fields: [...authority.sourceFields],
    scope_fields: [...authority.scopeFields],
    confidence_field: authority.confidenceField,
    status_field: authority.statusField,
    validity_fields: [...authority.validityFields],
    supersession_fields: [...authority.supersessionFields],
  };
}

function facetValue(observed: FacetCount): JsonObject {
  // Facet strings are emitted trimmed, like every other projected string (contract §6.2).
  const projected = publicFields({ value: observed.value })['value'] ?? null;
  return { value: projected, count: observed.count };
}

export class DiscoveryService {
  constructor(private readonly deps: DiscoveryDependencies) {}

  /** BootstrapResult: cards from registry rows and their active claims only. */
  async bootstrap(command: BootstrapCommand): Promise<JsonObject> {
    const limit = clamp(command.limit, 1, MAX_BOOTSTRAP_CARDS);
    try {
      return await this.deps.registry.read(async (tx) => {
        const services = await tx.listServices(this.deps.principalId, limit + 1);
        const cards: JsonObject[] = [];
        for (const service of services.slice(0, limit)) {
          const claim = await tx.getActiveClaim(this.deps.principalId, service.serviceId);
          cards.push({
            service_id: service.serviceId,
            domain_name: service.domainName,
            domain_class: service.domainClass,
            intent: service.intentDescription,
            state: service.designState,
            operational_status: service.operationalStatus,
            schema_version: service.schemaVersion === null ? null : BigInt(service.schemaVersion),
            recovery_state: claim === undefined ? 'clear' : claim.phase === 'prepared' ? 'pending' : 'recovery_required',
            entities: service.manifest === null ? [] : entityNamesOf(service.manifest),
          });
        }
        return { services: cards, truncated: services.length > limit };
      });
    } catch (error) {
      return dataFailure(error);
    }
  }

  /** ServiceSummaryResult over one consistent read of the admitted store. */
  async summary(command: SummaryCommand): Promise<JsonObject> {
    const admission = await this.deps.lifecycle.admitData(command.serviceId);
    const sample = clamp(command.sample, 0, MAX_SAMPLES);
    const model = deriveModel(admission.manifest);
    const layouts = new Map(model.entities.map((entity) => [entity.name, layoutOf(admission, entity.name)]));
    const layout = (name: string) => {
      const found = layouts.get(name);
      if (!found) throw new AipcsError('validation_failed');
      return found;
    };
    if (!admission.service.storage) throw new AipcsError('storage_unavailable');
    try {
      return await this.deps.data.read(admission.service.storage, this.deps.principalId, async (tx) => {
        const recordCounts: JsonObject[] = [];
        let unbranched = 0n;
        for (const entity of model.entities) {
          recordCounts.push({ entity_name: entity.name, count: await tx.countRecords(layout(entity.name)) });
          unbranched += await tx.countWithoutPrimary(layout(entity.name));
        }
        const facets: JsonObject[] = [];
        const facetBudget = new TextBudget(SUMMARY_FACET_TEXT_BUDGET);
        for (const facet of model.facets) {
          const observed = await tx.facetValues(layout(facet.entity), facet.field, facet.valueShape, MAX_FACET_VALUES);
          const values = facetBudget.prefix(observed.slice(0, MAX_FACET_VALUES).map(facetValue));
          facets.push({ entity_name: facet.entity, field_name: facet.field, values });
        }
        const cards = (await tx.branchCards(MAX_BRANCH_CARDS)).slice(0, MAX_BRANCH_CARDS);
        const samples: JsonObject[] = [];
        const sampleBudget = new TextBudget(SUMMARY_SAMPLE_TEXT_BUDGET);
        for (const entity of model.entities) {
          const records = sample === 0 ? [] : await tx.queryRecords(layout(entity.name), { filters: [], branch: null, afterId: null, limit: sample });
          const documents = records.slice(0, sample).map((record) => recordDocument(entity.name, record));
          samples.push({ entity_name: entity.name, records: sampleBudget.prefix(documents) });
        }
        return {
          // This implementation never leaves a store needing a storage migration (contract §12.13).
          data_status: 'ready',
          affordances: model.entities.map(affordances),
          authority_field_availability: model.entities.map(authorityAvailability),
          query_guidance: { patterns: [...model.queryPatterns], retrieval_guidance: model.retrievalGuidance },
          record_counts: recordCounts,
          facets,
          branches: cards.map((card) => ({ branch: branchDocument(card.branch), primary_record_count: card.primaryCount, related_record_count: card.relatedCount })),
          unbranched_record_count: unbranched,
          samples,
        };
      });
    } catch (error) {
      return dataFailure(error);
    }
  }
}

/**
 * Contract text (ASCII-only, as content[0].text renders it) the summary's
 * samples and facet values may take. The contract allows 3 samples of up to
 * 64 KiB for each of 32 entities and 20 values of up to 16 KiB for each of 64
 * facets; a tool result carries the envelope twice and the JSON-RPC line
 * escapes the text again, so such a summary was a line far above the 10 MiB
 * the MCP TypeScript SDK client accepts, and the client closed the
 * connection. Both lists say "up to" / "at most", so items that do not fit
 * are left out (in order); with these budgets and the bounded branch cards
 * the line stays below about 9 MiB.
 */
export const SUMMARY_SAMPLE_TEXT_BUDGET = 1024 * 1024;
export const SUMMARY_FACET_TEXT_BUDGET = 512 * 1024;
