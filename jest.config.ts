/** @jest-config-loader esbuild-register */
import type { Config } from 'jest';

type Project = NonNullable<Config['projects']>[number] & object;

const common: Project = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/packages', '<rootDir>/docker'],
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
};

/**
 * The suites that run a second time on a 3-master Redis Cluster (CONTRACT 16): the delivery suites whose work goes
 * through the queues in ways a cluster changes (fan-out, batching, retries and their outcomes, state changes, the
 * local path and its recall, per-webhook pacing in Redis), recover and replay tasks, rate limit checks (HTTP and gRPC,
 * in one process and across two) and management throttling on the shared store, the redis counter store, the
 * reconciler, and the cluster's own tests (periodic work, watchdog, readiness). The delivery suites about what happens inside one process (templates, egress, fair
 * scheduling, a URL's origin change) run once: a cluster changes nothing they test.
 */
export const CLUSTER_SUITES = [
  ...['batching', 'hot-path', 'outcomes', 'rate-limit', 'state'].map(
    (suite) => `<rootDir>/apps/worker/test/delivery.${suite}.test.ts`,
  ),
  '<rootDir>/apps/worker/test/recover-*.test.ts',
  '<rootDir>/apps/worker/test/reconciler.test.ts',
  '<rootDir>/apps/worker/test/queues.test.ts',
  '<rootDir>/apps/api/test/rate-limit-check.test.ts',
  '<rootDir>/apps/api/test/rate-limit-grpc.test.ts',
  '<rootDir>/apps/api/test/rate-limit-grpc.processes.test.ts',
  '<rootDir>/apps/api/test/throttling.test.ts',
  '<rootDir>/packages/ratelimit/src/stores/redis.test.ts',
  '<rootDir>/packages/cache/src/invalidation.nodes.test.ts',
];

// Every test runs against the machine's real Postgres and Redis; each test file uses its own organisation ids and
// Redis prefix, so files run in parallel. The `redis-cluster` project reruns CLUSTER_SUITES on a Redis Cluster its
// global setup starts (and its teardown stops): `pnpm jest --selectProjects redis` runs the single-node suites only.
const config: Config = {
  // Hooks start whole stacks (a migrated database, the API and a worker with their render threads and queue
  // consumers): on a loaded machine that alone can take half a minute. Tests wait for conditions, not for time.
  testTimeout: 60_000,
  maxWorkers: '50%',
  // Test files run in a worker process that is replaced once it holds more than this after a file. On 2 cores jest
  // would otherwise run every file in its own single process, where what the files leave behind (sockets, threads)
  // added up to the open-file limit (EMFILE) in one run.
  workerIdleMemoryLimit: '1GB',
  globalSetup: '<rootDir>/packages/testkit/src/global-setup.ts',
  projects: [
    { ...common, displayName: 'redis', testMatch: ['**/*.test.ts'] },
    {
      ...common,
      displayName: 'redis-cluster',
      testMatch: CLUSTER_SUITES,
      globalSetup: '<rootDir>/packages/testkit/src/cluster-global-setup.ts',
      globalTeardown: '<rootDir>/packages/testkit/src/cluster-global-teardown.ts',
      setupFiles: ['<rootDir>/packages/testkit/src/cluster-env.ts'],
    },
  ],
};

export default config;
