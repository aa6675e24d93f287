// Setup file of the `redis-cluster` jest project (runs before each of its test files): points the test file at the
// cluster the project's global setup started, so testConfig() sets REDIS_CLUSTER_NODES and testRedis() connects there.
if (process.env.GATEHOOK_TEST_CLUSTER_SEEDS)
  process.env.TEST_REDIS_CLUSTER_NODES = process.env.GATEHOOK_TEST_CLUSTER_SEEDS;
