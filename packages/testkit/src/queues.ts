import type { DeliveryQueues, JobName } from '@gatehook/delivery';

type Queue = DeliveryQueues['shardsOf'] extends (...args: never[]) => readonly (infer Q)[] ? Q : never;
type JobState = NonNullable<Parameters<Queue['getJobs']>[0]>;
type Job = Awaited<ReturnType<Queue['getJobs']>>[number];

/** One queue of the catalogue (one shard of a sharded one). */
export function queueOf(queues: DeliveryQueues, name: JobName, shard = 0): Queue {
  return queues.shardsOf(name)[shard]!;
}

/** The jobs of a name in these states, over all its shards. */
export async function queuedJobs(queues: DeliveryQueues, name: JobName, states: JobState): Promise<Job[]> {
  return (await Promise.all(queues.shardsOf(name).map((q) => q.getJobs(states)))).flat();
}

/** Removes every job of a name, over all its shards. */
export async function obliterate(queues: DeliveryQueues, name: JobName): Promise<void> {
  await Promise.all(queues.shardsOf(name).map((q) => q.obliterate({ force: true })));
}
