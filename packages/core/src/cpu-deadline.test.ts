import { Worker } from 'node:worker_threads';
import {
  BASELINE_MAX_AGE_MS,
  createThreadClock,
  threadClock,
  threadCpuMs,
  WALL_CAP_FACTOR,
} from '@gatehook/core/cpu-deadline';

/** Clocks the test moves by hand: wall-clock and this thread's CPU time, in ms, and how often the CPU was read. */
function clocks(counted = true) {
  const state = { wall: 1000, cpu: counted ? 0 : undefined, reads: 0 };
  const clock = createThreadClock(
    () => state.wall,
    () => {
      state.reads += 1;
      return state.cpu;
    },
  );
  return { state, clock };
}

describe('createThreadClock', () => {
  it('counts a budget in CPU time: a thread kept off the CPU is not stopped at its budget of wall-clock time', () => {
    const { state, clock } = clocks();
    const deadline = clock.deadline(100);
    state.wall += 300;
    state.cpu! += 60;
    expect(deadline.passed()).toBe(false);
    state.wall += 30;
    state.cpu! += 30;
    expect(deadline.passed()).toBe(false);
    state.wall += 20;
    state.cpu! += 10;
    expect(deadline.passed()).toBe(true);
    // Spent stays spent.
    state.cpu! -= 50;
    expect(deadline.passed()).toBe(true);
  });

  it('reads the CPU clock only once the wall clock has passed what the budget has left', () => {
    const { state, clock } = clocks();
    const deadline = clock.deadline(100);
    const readsAtStart = state.reads;
    for (let i = 0; i < 10; i += 1) {
      state.wall += 10;
      state.cpu! += 5;
      expect(deadline.passed()).toBe(false);
    }
    expect(state.reads).toBe(readsAtStart);
    // Past 100 ms of wall-clock time with 50 ms of CPU used: one reading, then none until 50 ms more have passed.
    state.wall += 1;
    expect(deadline.passed()).toBe(false);
    expect(state.reads).toBe(readsAtStart + 1);
    state.wall += 49;
    expect(deadline.passed()).toBe(false);
    expect(state.reads).toBe(readsAtStart + 1);
  });

  it(`stops a starved thread at ${WALL_CAP_FACTOR} times its budget of wall-clock time`, () => {
    const { state, clock } = clocks();
    const deadline = clock.deadline(100);
    state.wall += 100 * WALL_CAP_FACTOR;
    state.cpu! += 10;
    expect(deadline.passed()).toBe(false);
    state.wall += 1;
    expect(deadline.passed()).toBe(true);
  });

  it('counts wall-clock time where the OS gives no thread clock', () => {
    const { state, clock } = clocks(false);
    expect(clock.counted).toBe(false);
    const deadline = clock.deadline(100);
    state.wall += 100;
    expect(deadline.passed()).toBe(false);
    state.wall += 1;
    expect(deadline.passed()).toBe(true);
  });

  it(`starts budgets from a reading at most ${BASELINE_MAX_AGE_MS} ms old, so a stream of short budgets seldom reads the clock`, () => {
    const { state, clock } = clocks();
    const before = state.reads;
    for (let i = 0; i < 100; i += 1) {
      state.wall += 0.5;
      state.cpu! += 0.5;
      clock.deadline(50);
    }
    // 50 ms of budgets started every 0.5 ms: a reading each BASELINE_MAX_AGE_MS, not one each.
    expect(state.reads - before).toBeLessThanOrEqual(Math.ceil(50 / BASELINE_MAX_AGE_MS) + 1);
    // A budget started from an older reading counts the CPU time since that reading: it can only come out short.
    state.wall += BASELINE_MAX_AGE_MS;
    const deadline = clock.deadline(10);
    state.wall += 11;
    state.cpu! += 10;
    expect(deadline.passed()).toBe(true);
  });
});

describe('threadClock', () => {
  it('counts wall-clock time on the main thread, whose other work waits for a budget however little CPU it gets', () => {
    expect(threadClock.counted).toBe(false);
  });
});

describe('threadCpuMs', () => {
  const counted = threadCpuMs() !== undefined;
  (counted ? it : it.skip)('is the calling thread’s own CPU time, not the process’s', async () => {
    const before = threadCpuMs()!;
    // Another thread busy for 300 ms of wall-clock time while this one waits for it.
    await new Promise<void>((resolve, reject) => {
      const worker = new Worker('const t = Date.now(); while (Date.now() - t < 300);', { eval: true });
      worker.on('exit', () => resolve());
      worker.on('error', reject);
    });
    const waited = threadCpuMs()! - before;
    expect(waited).toBeLessThan(150);
    const start = threadCpuMs()!;
    const t = performance.now();
    while (performance.now() - t < 100);
    expect(threadCpuMs()! - start).toBeGreaterThan(20);
  });
});
