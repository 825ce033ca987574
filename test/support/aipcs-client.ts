// Starts `aipcs serve` as a child process and talks to it with the MCP SDK's
// stdio client, as an agent host does. Tool results are returned as their
// parsed envelope (from the text item, which must equal structuredContent).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { aipcsBin } from './bins.js';
import { nodeCommand, type ResourceLimits } from './resource-limits.js';

export interface Envelope {
  ok: boolean;
  result: Record<string, unknown> | null;
  error: { code: string; message: string; issues: { code: string; path: string }[]; retryable: boolean } | null;
}

export interface AipcsClient {
  readonly client: Client;
  call(name: string, args?: Record<string, unknown>): Promise<Envelope>;
  /** stderr text collected so far. */
  stderr(): string;
  close(): Promise<void>;
}

/** A private data root for one test: the parent is a fresh 0700 temp folder. */
export function freshDataRoot(): string {
  return join(mkdtempSync(join(tmpdir(), 'aipcs-e2e-')), 'data');
}

export async function startAipcs(args: string[], env: Record<string, string> = {}, limits: ResourceLimits = {}): Promise<AipcsClient> {
  const client = new Client({ name: 'aipcs-test', version: '1.0.0' });
  const [command, commandArgs] = nodeCommand([aipcsBin(), 'serve', ...args], limits);
  const transport = new StdioClientTransport({
    command,
    args: commandArgs,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await client.connect(transport);
  return {
    client,
    async call(name, args = {}) {
      const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 });
      const content = result.content as { type: string; text: string }[];
      if (content.length !== 1 || content[0]?.type !== 'text') throw new Error('a tool result must hold exactly one text item');
      const envelope = JSON.parse(content[0].text) as Envelope;
      if (JSON.stringify(envelope) !== JSON.stringify(result.structuredContent)) throw new Error('text and structuredContent differ');
      if (result.isError !== !envelope.ok) throw new Error('isError does not mirror ok');
      return envelope;
    },
    stderr: () => stderr,
    close: () => client.close(),
  };
}

export function sqliteArgs(dataRoot: string, principal = 'local-agent'): string[] {
  return ['--profile', 'sqlite', '--principal-id', principal, '--sqlite-data-root', dataRoot, '--sqlite-busy-timeout-ms', '5000'];
}

/** One storage backend to run an end-to-end test against: fresh storage, and how to start servers on it. */
export interface ServerProfile {
  readonly name: string;
  /** Fresh, empty storage; returns the serve arguments and environment for it. */
  fresh(principal?: string): Promise<{ args: string[]; env: Record<string, string>; drop(): Promise<void> }>;
}

export const sqliteProfile: ServerProfile = {
  name: 'sqlite',
  async fresh(principal = 'local-agent') {
    return { args: sqliteArgs(freshDataRoot(), principal), env: {}, drop: async () => undefined };
  },
};

/** SQLite plus every PostgreSQL cluster the test setup started. */
export async function serverProfiles(): Promise<ServerProfile[]> {
  const { postgresClusters, createTestDatabase } = await import('./postgres.js');
  return [
    sqliteProfile,
    ...postgresClusters().map(
      (cluster): ServerProfile => ({
        name: `postgresql ${cluster.version}`,
        async fresh(principal = 'local-agent') {
          const database = await createTestDatabase(cluster);
          return {
            args: ['--profile', 'postgresql', '--principal-id', principal, '--postgres-dsn-env', 'AIPCS_TEST_POSTGRES_DSN'],
            env: { AIPCS_TEST_POSTGRES_DSN: database.url },
            drop: () => database.drop(),
          };
        },
      }),
    ),
  ];
}
