/** @jest-config-loader esbuild-register */
import type { Config } from 'jest';

// Every test runs against the machine's real Postgres and Redis; each test file uses its own
// organisation ids and Redis prefix, so files run in parallel.
const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/packages', '<rootDir>/docker'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: {
    '^.+\\.(t|j|mj|cj)s$': [
      '@swc/jest',
      { jsc: { target: 'es2023', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
    ],
  },
  // got and a few of its dependencies are ESM-only: let swc turn them into CommonJS for jest.
  transformIgnorePatterns: [],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  testTimeout: 30_000,
  maxWorkers: '50%',
  globalSetup: '<rootDir>/packages/testkit/src/global-setup.ts',
};

export default config;
