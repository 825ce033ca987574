// Lint rules, including the architecture's import boundaries: each block says
// who may import whom (see docs/architecture.md).
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({
  'no-restricted-imports': ['error', { patterns }],
});

// A later block's no-restricted-imports replaces an earlier one's for the
// same file, so the pure layers repeat their system's boundary.
const systemBoundary = (others) => ({ group: others.map((name) => `**/${name}/**`), message: 'Systems do not import each other; share through common/.' });
const aipBoundary = systemBoundary(['aipcs', 'aigpt']);
const aigptBoundary = systemBoundary(['aipcs', 'aip']);
const aipcsBoundary = systemBoundary(['aigpt', 'aip']);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // stdout is the protocol on stdio: nothing in src/ prints with console.
    files: ['src/**/*.ts'],
    rules: { 'no-console': 'error' },
  },
  {
    files: ['src/common/**/*.ts'],
    rules: restrict([
      { group: ['**/aipcs/**', '**/aigpt/**', '**/aip/**'], message: 'common/ is shared plumbing and imports no system.' },
    ]),
  },
  {
    files: ['src/aip/**/*.ts'],
    rules: restrict([aipBoundary]),
  },
  {
    files: ['src/aigpt/**/*.ts'],
    rules: restrict([aigptBoundary]),
  },
  {
    files: ['src/aipcs/**/*.ts'],
    rules: restrict([aipcsBoundary]),
  },
  {
    files: ['src/aipcs/contract/**/*.ts', 'src/aipcs/core/**/*.ts'],
    rules: restrict([
      aipcsBoundary,
      { group: ['node:*', 'better-sqlite3', 'pg', '@modelcontextprotocol/*', 'commander'], message: 'contract/ and core/ are pure: no I/O, drivers, SDK or CLI.' },
      { group: ['**/storage/**', '**/mcp/**', '**/cli/**', '**/config/**', '**/portable/**', '**/compose*'], message: 'contract/ and core/ depend on ports only.' },
    ]),
  },
  {
    files: ['src/aip/core/**/*.ts'],
    rules: restrict([
      aipBoundary,
      { group: ['node:fs*', 'node:child_process', 'node:net', 'node:http', 'commander', '@modelcontextprotocol/*'], message: 'aip/core is pure: no file or process I/O.' },
      { group: ['**/repository/**', '**/runner/**', '**/cli/**'], message: 'aip/core does not depend on outer layers.' },
    ]),
  },
  {
    files: ['src/aigpt/core/**/*.ts'],
    rules: restrict([
      aigptBoundary,
      { group: ['node:fs*', 'node:child_process', 'node:net', 'node:http', 'commander', '@modelcontextprotocol/*'], message: 'aigpt/core is pure: no file or process I/O.' },
      { group: ['**/storage/**', '**/config/**', '**/mcp/**', '**/cli/**', '**/app*'], message: 'aigpt/core does not depend on outer layers.' },
    ]),
  },
);
