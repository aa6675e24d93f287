import globalSetup from './global-setup';
import { startRedisCluster } from './redis-cluster';

/**
 * Jest global setup of the `redis-cluster` project: migrates the test database and starts a 3-master Redis Cluster
 * (redis-server --cluster-enabled on free ports, in a temp dir); its seeds reach the project's test files through
 * GATEHOOK_TEST_CLUSTER_SEEDS (./cluster-env.ts), its directory reaches the teardown, which stops it by pid.
 */
export default async function clusterGlobalSetup(): Promise<void> {
  await globalSetup();
  const cluster = await startRedisCluster({ masters: 3 });
  process.env.GATEHOOK_TEST_CLUSTER_SEEDS = cluster.seeds.join(',');
  process.env.GATEHOOK_TEST_CLUSTER_DIR = cluster.dir;
}
