import { TEST_DATABASE_URL } from '@gatehook/testkit/env';
import { createDb, sqlPool } from '@gatehook/db/client';
import { createWorkerMetrics } from '../src/metrics';

describe('worker process metrics', () => {
  const db = createDb(TEST_DATABASE_URL, { poolSize: 1 });
  afterAll(() => db.$disconnect());

  it('reports its CPU, memory, event loop lag and GC under gatehook_worker_, as the API does under gatehook_api_', async () => {
    const text = await createWorkerMetrics(sqlPool(db)).registry.metrics();
    for (const name of [
      'gatehook_worker_process_cpu_seconds_total',
      'gatehook_worker_process_resident_memory_bytes',
      'gatehook_worker_nodejs_eventloop_lag_p99_seconds',
      'gatehook_worker_nodejs_heap_size_used_bytes',
      'gatehook_worker_nodejs_gc_duration_seconds',
    ]) {
      expect(text).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    }
  });
});
