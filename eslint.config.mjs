// @ts-check
import { readFileSync } from 'node:fs';
import { URL } from 'node:url';
import eslint from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/**
 * The packages' entry points, read from their package.json `exports` (tsconfig.json's `paths` and Jest's
 * moduleNameMapper map the same ones, test/package-entry-points.spec.ts checks): anything else under a package's
 * name is one of its internal files, which code outside the package must not import.
 */
function entryPoints(library) {
  const manifest = JSON.parse(
    readFileSync(new URL(`./libs/${library}/package.json`, import.meta.url), 'utf8'),
  );
  return Object.keys(manifest.exports)
    .filter((key) => key !== '.' && key !== './package.json')
    .map((key) => key.slice('./'.length));
}
const CORE_ENTRY_POINTS = entryPoints('reliable-messaging');
const ADMIN_ENTRY_POINTS = entryPoints('reliable-messaging-admin');

/** Imports of a package's internal files by name, refused everywhere. */
const INTERNAL_FILES_BY_NAME = [
  {
    regex: `^nestjs-reliable-messaging/(?!(${CORE_ENTRY_POINTS.join('|')})$)`,
    message: `an internal file of nestjs-reliable-messaging: import its root or one of its entry points (/${CORE_ENTRY_POINTS.join(', /')})`,
  },
  {
    regex: `^nestjs-reliable-messaging-admin/(?!(${ADMIN_ENTRY_POINTS.join('|')})$)`,
    message: `an internal file of nestjs-reliable-messaging-admin: import its root or one of its entry points (/${ADMIN_ENTRY_POINTS.join(', /')})`,
  },
];

/** `no-restricted-imports` with the internal files refused, plus `patterns` for one part of the repository. */
function boundaries(...patterns) {
  return { 'no-restricted-imports': ['error', { patterns: [...INTERNAL_FILES_BY_NAME, ...patterns] }] };
}

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
  // Package boundaries: a package's files are reached only through its entry points, and the core knows nothing
  // of the admin package, which builds on the core's public entry points (docs/architecture.md).
  { files: ['**/*.ts'], rules: boundaries() },
  {
    files: ['apps/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: boundaries({
      regex: '^\\.{1,2}/(.*/)?libs/',
      message: "a package's internal file: import the package by name (nestjs-reliable-messaging, …) instead",
    }),
  },
  // The fuzz specs call every parser of outside data directly, internal ones included (docs/development.md).
  { files: ['test/fuzz/**/*.ts'], rules: boundaries() },
  {
    files: ['libs/reliable-messaging/src/**/*.ts'],
    rules: boundaries({
      regex: '(^nestjs-reliable-messaging-admin|reliable-messaging-admin/)',
      message: 'the core knows nothing of the admin package: it depends on the core, never the other way',
    }),
  },
  {
    files: ['libs/reliable-messaging-admin/src/**/*.ts'],
    rules: boundaries({
      regex: '^\\.{1,2}/(.*/)?reliable-messaging/src(/|$)',
      message:
        "the core's internal file: import a core entry point (nestjs-reliable-messaging/operations, …) instead",
    }),
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
