// Lint rules that carry the architecture: imports point inward (DESIGN.md "The parts").
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

const zone = (target, from, message) => ({ target, from, message });

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'data/**',
      'dist/**',
      'web/dist/**',
      'test-results/**',
      'eslint.config.js',
      // compiled by test/pack/pack-smoke.sh against the installed package, not against this tree
      'test/pack/consumer.ts',
    ],
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            zone('./src/core', './src/!(core)/**/*', 'core/ imports nothing of ours'),
            zone('./src/store', './src/!(core|store)/**/*', 'store/ depends only on core/'),
            zone('./src/protocols', './src/!(core|protocols)/**/*', 'protocols/ are wire formats only'),
            zone(
              './src/connectors',
              './src/!(core|protocols|connectors)/**/*',
              'connectors/ sit below plane/',
            ),
            zone('./src/plane', './src/host', 'plane/ and host/ meet only on the wire'),
            zone('./src/host', './src/plane', 'plane/ and host/ meet only on the wire'),
            // Plain folder lists: a `(a|b)` group in `from` matches nothing, so each folder is named.
            zone(
              './src/plane',
              ['./src/server', './src/cli', './src/lab'],
              'plane/ is below server/, cli/ and lab/',
            ),
            zone(
              './src/host',
              ['./src/server', './src/cli', './src/lab', './src/connectors'],
              'host/ is below server/ and cli/, and never uses the client connectors',
            ),
            zone('./src/server', './src/cli/**/*', 'server/ is below cli/'),
            zone(
              './src/lab',
              ['./src/server', './src/cli', './src/host'],
              'lab/ runs the engine, not the server or the host',
            ),
            zone(
              './src/conformance',
              ['./src/server', './src/cli', './src/host'],
              'conformance/ runs the engine against an agent on the wire, never our host in process',
            ),
            ...['core', 'store', 'protocols', 'connectors', 'plane', 'host', 'server', 'lab'].map((layer) =>
              zone(`./src/${layer}`, './src/conformance', 'only cli/ runs conformance/'),
            ),
          ],
        },
      ],
      'no-console': 'error',
    },
  },
  {
    // Only the CLI reads the environment and builds the logger; library code takes the logger port
    // (src/core/logger.ts) and its settings as arguments.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'pino', message: 'take a Logger (src/core/logger.ts); only src/cli/ builds pino' }],
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'only src/cli/ reads the environment' },
      ],
    },
  },
  {
    // Wire formats describe bytes; the servers that carry them live with their users (host/http/).
    files: ['src/protocols/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'pino', message: 'take a Logger (src/core/logger.ts); only src/cli/ builds pino' }],
          patterns: [
            {
              regex: '^(node:)?(http|https|http2|net)$|^hono$|^@hono/',
              message: 'protocols/ are wire formats only: HTTP servers belong in host/http/ or server/',
            },
          ],
        },
      ],
    },
  },
  { files: ['src/cli/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts'], rules: { 'no-console': 'off' } },
);
