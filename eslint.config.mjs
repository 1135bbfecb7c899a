// @ts-check
import eslint from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/**
 * Type-aware linting: every .ts file (libs, apps, test, bench) is linted with the types of tsconfig.json, which
 * includes them all, so rules see promises and `any`. The JavaScript files (the configs, scripts/, the Jest
 * reporter) belong to no tsconfig and get the syntax-only rules. Formatting belongs to Prettier; nothing here
 * checks layout.
 */
export default defineConfig(
  // bench/golevelup is a project of its own (NestJS 11, its own node_modules), run as it is by the peers suite.
  // test/package/*-app are the package test's apps: compiled under strict by it, outside the repository, against
  // the installed tarballs (they belong to no tsconfig here).
  {
    ignores: [
      'dist/',
      'libs/*/dist/',
      'coverage/',
      'node_modules/',
      'bench/golevelup/',
      'test/package/*-app/',
    ],
  },
  eslint.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A promise nobody awaits must be marked `void` on purpose; a rejection nobody handles crashes Node.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // Passing on a caught value (`unknown`) or an abort reason (`any`) as it came is not inventing a non-Error.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // Off: handlers and test doubles are `async` to meet a Promise-returning contract, awaiting or not.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        module: 'writable',
        require: 'readonly',
        process: 'readonly',
        __dirname: 'readonly',
        setTimeout: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
