import { join } from 'node:path';
import { FairPool, RenderDeadlineError, RenderPoolClosedError } from './fair-pool';

const FIXTURE = join(__dirname, 'fair-pool.fixture.cjs');

interface Busy {
  label: string;
  threadId: number;
  startedAt: number;
  endedAt: number;
}

describe('FairPool on real threads', () => {
  let pool: FairPool;
  afterEach(() => pool.close());

  it('runs another organisation’s task before one organisation’s backlog', async () => {
    pool = new FairPool({ filename: FIXTURE, threads: 2, hardDeadlineMs: 10_000 });
    // Threads are warm before the measurement.
    await Promise.all([
      pool.run('warm', 'busy', { ms: 1, label: 'w1' }),
      pool.run('warm', 'busy', { ms: 1, label: 'w2' }),
    ]);
    // a's first two tasks end 200 ms apart: had they ended together, which of b and a's third began first on its
    // thread would be a race of thread wake-ups, not the pool's choice.
    const backlog = Array.from({ length: 8 }, (_, i) =>
      pool.run<Busy>('a', 'busy', { ms: i === 1 ? 300 : 100, label: `a${i}` }),
    );
    const other = pool.run<Busy>('b', 'busy', { ms: 1, label: 'b' });
    const b = await other;
    const a = await Promise.all(backlog);
    // b started once one of a's first two tasks ended, before a's third.
    expect(a.filter((t) => t.startedAt < b.startedAt).length).toBeLessThanOrEqual(2);
    expect(a.filter((t) => t.endedAt <= b.startedAt + 1).length).toBeLessThanOrEqual(2);
  });

  it('terminates a task that runs past the hard deadline, replaces its thread, and the rest of the pool goes on', async () => {
    pool = new FairPool({ filename: FIXTURE, threads: 2, hardDeadlineMs: 500 });
    const spinning = pool.run('a', 'spin', {});
    const meanwhile = await pool.run<Busy>('b', 'busy', { ms: 1, label: 'b' });
    expect(meanwhile.label).toBe('b');
    await expect(spinning).rejects.toBeInstanceOf(RenderDeadlineError);
    await expect(spinning).rejects.toThrow(/hard deadline of 500 ms/);
    // Both threads serve again: two tasks at once, on two threads, one of them new.
    const after = await Promise.all([
      pool.run<Busy>('a', 'busy', { ms: 50, label: 'x' }),
      pool.run<Busy>('c', 'busy', { ms: 50, label: 'y' }),
    ]);
    expect(new Set(after.map((t) => t.threadId)).size).toBe(2);
    expect(after.map((t) => t.threadId)).not.toContain(undefined);
  });

  it('fails waiting tasks on close, and close is safe twice', async () => {
    pool = new FairPool({ filename: FIXTURE, threads: 2, hardDeadlineMs: 10_000 });
    const tasks = Array.from({ length: 4 }, (_, i) =>
      pool.run('a', 'busy', { ms: 50, label: `a${i}` }).catch((error: unknown) => error),
    );
    await Promise.all([pool.close(), pool.close()]);
    const results = await Promise.all(tasks);
    expect(results.filter((r) => r instanceof RenderPoolClosedError)).toHaveLength(2);
    await expect(pool.run('a', 'busy', { ms: 1 })).rejects.toBeInstanceOf(RenderPoolClosedError);
  });
});
