// docs/tools.md is the reader's map of the 21 tools the seed promises. Its
// table must name the tools tools/list offers, in the same order, with the
// same required and optional arguments as their input schemas.

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';

interface DocumentedTool {
  name: string;
  required: string[];
  optional: string[];
}

const namesIn = (cell: string): string[] => [...cell.matchAll(/`([a-z_]+)`/g)].map((match) => match[1] as string);

function documentedTools(): DocumentedTool[] {
  const text = readFileSync(new URL('../../../docs/tools.md', import.meta.url), 'utf8');
  const table = text.slice(text.indexOf('<!-- tools-table'));
  return table
    .slice(0, table.indexOf('\n\n', table.indexOf('| Tool')))
    .split('\n')
    .filter((line) => line.startsWith('| `aipcs_'))
    .map((line) => {
      const [name, required, optional] = line.split('|').slice(1, 4).map((cell) => cell.trim()) as [string, string, string];
      return { name: namesIn(name)[0] as string, required: namesIn(required).sort(), optional: namesIn(optional).sort() };
    });
}

describe('docs/tools.md', () => {
  let server: AipcsClient;

  beforeAll(async () => {
    server = await startAipcs(sqliteArgs(freshDataRoot()));
  });

  afterAll(async () => {
    await server.close();
  });

  it('lists every tool of a sqlite server in tools/list order, with its required and optional arguments', async () => {
    const { tools } = await server.client.listTools();
    const listed = tools.map((tool) => {
      const properties = Object.keys(tool.inputSchema.properties ?? {});
      const required = tool.inputSchema.required ?? [];
      return {
        name: tool.name,
        required: [...required].sort(),
        optional: properties.filter((property) => !required.includes(property)).sort(),
      };
    });
    expect(listed).toHaveLength(21);
    expect(documentedTools()).toEqual(listed);
  });
});
