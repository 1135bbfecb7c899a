/** The usual Jest setup of a CommonJS Nest app: ts-jest, no ESM. */
module.exports = {
  testEnvironment: 'node',
  testRegex: 'test/.*\\.test\\.ts$',
  moduleFileExtensions: ['js', 'json', 'ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
};
