import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', 'clients/', '.cache/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
      // Library code never exits the process; only the executable's entry does.
      'no-restricted-properties': ['error', { object: 'process', property: 'exit', message: 'return an exit status instead' }],
    },
  },
  {
    files: ['sidecar/main.ts', 'test/**', 'examples/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
