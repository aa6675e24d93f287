/** Where the tests' Postgres server and Redis are; the machine's local services unless overridden. */
export const TEST_PG_SERVER = process.env.TEST_PG_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? `${TEST_PG_SERVER}/gatehook_test`;
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * Seed URLs of a Redis Cluster, comma-separated: set for the suites jest's `redis-cluster` project runs again on
 * the cluster its global setup starts (jest.config.ts); tests then run with REDIS_CLUSTER_NODES set.
 */
export const TEST_REDIS_CLUSTER_NODES = process.env.TEST_REDIS_CLUSTER_NODES ?? '';
