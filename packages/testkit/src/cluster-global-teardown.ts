import { stopRedisClusterIn } from './redis-cluster';

/** Jest global teardown of the `redis-cluster` project: stops the cluster its setup started, by pid. */
export default async function clusterGlobalTeardown(): Promise<void> {
  const dir = process.env.GATEHOOK_TEST_CLUSTER_DIR;
  if (dir) await stopRedisClusterIn(dir);
}
