/** Jest runs in ESM mode: the NestJS 12 packages are ESM-only and Jest's CommonJS loader cannot require them. */
module.exports = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  rootDir: '.',
  roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/test', '<rootDir>/scripts', '<rootDir>/bench'],
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  // The cluster failover spec starts a 3-node RabbitMQ cluster (30 s to 2 min): `npm run test:cluster` runs it.
  testPathIgnorePatterns: ['/node_modules/', '/test/cluster-failover\\.e2e-spec\\.ts$'],
  // One suite at a time by default; `npm test` runs the end-to-end specs in two groups (scripts/run-e2e.mjs).
  maxWorkers: 1,
  testTimeout: 60_000,
  // Deletes the rm-e2e-… queues and exchanges specs left behind, before and after the run.
  globalSetup: '<rootDir>/test/support/sweep-broker.mjs',
  globalTeardown: '<rootDir>/test/support/sweep-broker.mjs',
  reporters: ['default', '<rootDir>/test/support/closing-line.reporter.cjs'],
  // Only the packages' entry points, as tsconfig.json's paths: an internal file is not importable from outside.
  moduleNameMapper: {
    '^nestjs-reliable-messaging$': '<rootDir>/libs/reliable-messaging/src/index.ts',
    '^nestjs-reliable-messaging/(typeorm|testing|http|claim-check|microservices|operations|safe-json|health)$':
      '<rootDir>/libs/reliable-messaging/src/$1.ts',
    '^nestjs-reliable-messaging-admin$': '<rootDir>/libs/reliable-messaging-admin/src/index.ts',
    '^nestjs-reliable-messaging-admin/(cli|typeorm)$': '<rootDir>/libs/reliable-messaging-admin/src/$1.ts',
  },
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      {
        useESM: true,
        tsconfig: '<rootDir>/tsconfig.jest.json',
      },
    ],
  },
};
