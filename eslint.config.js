import js from '@eslint/js'
import tseslint from 'typescript-eslint'

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
    files: ['collector/**/*.ts', 'agent/**/*.ts', 'controller/**/*.ts', 'migrations/**/*.ts'],
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
    files: ['test/**/*.ts', 'test/**/*.tsx'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
)
