import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import importX from 'eslint-plugin-import-x'
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript'

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'coverage/**', 'dashboard/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // Other folders reach a component only through its index.ts (STYLE.md section 1).
    files: ['bin/**/*.ts', 'collector/**/*.ts', 'agent/**/*.ts', 'controller/**/*.ts', 'migrations/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '../agent/*',
                '../../agent/*',
                '../../../agent/*',
                '!../agent/index.js',
                '!../../agent/index.js',
                '!../../../agent/index.js',
              ],
              message: 'Import the agent through agent/index.js.',
            },
            {
              group: [
                '../controller/*',
                '../../controller/*',
                '../../../controller/*',
                '!../controller/index.js',
                '!../../controller/index.js',
                '!../../../controller/index.js',
              ],
              message: 'Import the controller through controller/index.js.',
            },
          ],
        },
      ],
    },
  },
  {
    // The arrows of DESIGN.md ("Who depends on whom"): bin/ is the only composition root and nothing imports it;
    // the collector owns the report format and imports neither the agent nor the controller.
    files: ['bin/**/*.ts', 'collector/**/*.ts', 'agent/**/*.ts', 'controller/**/*.ts', 'migrations/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              target: ['./collector', './agent', './controller', './migrations'],
              from: './bin',
              message: 'bin/ is the composition root: nothing imports it.',
            },
            {
              target: './collector',
              from: ['./agent', './controller'],
              message: 'The collector depends on nothing else of ours (DESIGN.md).',
            },
            {
              target: './agent',
              from: './controller',
              message: 'The agent and the controller depend on the collector, never on each other.',
            },
            {
              target: './controller',
              from: './agent',
              message: 'The agent and the controller depend on the collector, never on each other.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'test/**/*.tsx'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
)
