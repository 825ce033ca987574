// Runs the built `aipcs` administration commands as child processes and sets
// services up through a real `aipcs serve` over MCP, the way an operator and
// an agent would. Results come back as parsed envelopes with the exit status.

import { spawn, spawnSync } from 'node:child_process';
import { aipcsBin } from './bins.js';
import { freshDataRoot, sqliteArgs, startAipcs, type AipcsClient } from './aipcs-client.js';
import { wireNotesManifest } from './wire-manifests.js';

export interface CliEnvelope {
  ok: boolean;
  result: Record<string, unknown> | null;
  error: { code: string; message: string; issues: { code: string; path: string; message: string; remediation: string | null }[]; retryable: boolean } | null;
}

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
  /** The one envelope line printed (stdout on success, stderr on failure), parsed. */
  envelope: CliEnvelope;
}

const baseEnv = (): Record<string, string> => ({ PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' });

function parseEnvelope(stdout: string, stderr: string): CliEnvelope {
  const line = (stdout.trim() || stderr.trim()).split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line) as CliEnvelope;
  } catch {
    return { ok: false, result: null, error: null };
  }
}

/** Runs `aipcs …` synchronously (stdin is a pipe, so never interactive). */
export function aipcs(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): CliRun {
  const run = spawnSync(process.execPath, [aipcsBin(), ...args], {
    encoding: 'utf8',
    env: { ...baseEnv(), ...options.env },
    timeout: 60_000,
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr, envelope: parseEnvelope(run.stdout, run.stderr) };
}

/** The same, asynchronously (for commands that race with other processes). */
export function aipcsAsync(args: string[], options: { env?: Record<string, string> } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [aipcsBin(), ...args], { env: { ...baseEnv(), ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    // Decoded as streams: a character split across two chunks must not become two U+FFFD.
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (stdout += chunk));
    child.stderr.on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr, envelope: parseEnvelope(stdout, stderr) }));
  });
}

/** The storage flags of one data root and principal. */
export function rootArgs(dataRoot: string, principal = 'local-agent'): string[] {
  return sqliteArgs(dataRoot, principal);
}

export { freshDataRoot };

/** A server on a data root for setting things up over MCP. */
export async function serveOn(dataRoot: string, principal = 'local-agent'): Promise<AipcsClient> {
  return startAipcs(sqliteArgs(dataRoot, principal));
}

let keys = 0;
export const key = (prefix: string): string => `${prefix}-${++keys}-${process.pid}`;

/** Seeds a service; returns its id (revision 1). */
export async function seedService(client: AipcsClient, domainName: string): Promise<string> {
  const seeded = await client.call('aipcs_service_seed', { domain_name: domainName, domain_class: 'knowledge', intent_description: 'Project notes.', idempotency_key: key('seed') });
  if (!seeded.ok) throw new Error(`seed failed: ${JSON.stringify(seeded.error)}`);
  return seeded.result?.['service_id'] as string;
}

/** Seeds, designs (notes manifest) and materialises a service; returns its id (revision 3, active). */
export async function materialisedService(client: AipcsClient, domainName: string): Promise<string> {
  const serviceId = await seedService(client, domainName);
  const designed = await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: key('design') });
  if (!designed.ok) throw new Error(`design failed: ${JSON.stringify(designed.error)}`);
  const materialised = await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: key('mat') });
  if (!materialised.ok) throw new Error(`materialise failed: ${JSON.stringify(materialised.error)}`);
  return serviceId;
}

/** Serves `dataRoot` just long enough to materialise a service (as materialisedService); returns its id once the server has stopped. */
export async function materialisedServiceThenStop(dataRoot: string, domainName: string): Promise<string> {
  const client = await serveOn(dataRoot);
  try {
    return await materialisedService(client, domainName);
  } finally {
    await client.close();
  }
}

/** Creates a note; returns the record document. */
export async function createNote(client: AipcsClient, serviceId: string, record: Record<string, unknown>): Promise<Record<string, unknown>> {
  const created = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record, idempotency_key: key('create') });
  if (!created.ok) throw new Error(`create failed: ${JSON.stringify(created.error)}`);
  return created.result?.['record'] as Record<string, unknown>;
}
