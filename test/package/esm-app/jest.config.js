import { createDefaultEsmPreset } from 'ts-jest';

/** The usual Jest setup of an ESM Nest app: ts-jest's ESM preset, run with --experimental-vm-modules. */
export default {
  ...createDefaultEsmPreset({ tsconfig: 'tsconfig.json' }),
  testEnvironment: 'node',
  testRegex: 'test/.*\\.test\\.ts$',
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};
