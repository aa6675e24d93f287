import { FairQueue, type Started } from './fair-queue';
import { ORG_CPU_BUDGET_MS, ORG_CPU_WINDOW_MS, SHORT_TASK_MS } from '../tunables';

/** Starts every task the queue hands out now; returns them in order. */
function startAll<T>(queue: FairQueue<T>, now: number): Started<T>[] {
  const started: Started<T>[] = [];
  for (let s = queue.next(now); s; s = queue.next(now)) started.push(s);
  return started;
}

describe('FairQueue', () => {
  it('starts the other organisation’s task next, however long one organisation’s backlog', () => {
    const queue = new FairQueue<string>({ threads: 2 });
    for (let i = 0; i < 10; i++) queue.push('a', `a${i}`);
    const running = startAll(queue, 0);
    expect(running.map((s) => s.item)).toEqual(['a0', 'a1']);
    queue.push('b', 'b0');
    expect(queue.next(1)).toBeNull(); // both threads busy
    queue.finish(running[0]!, 10);
    expect(queue.next(10)?.item).toBe('b0');
    expect(queue.load().waiting).toEqual({ a: { running: 1, waiting: 8 }, b: { running: 1, waiting: 0 } });
  });

  it('shares threads round robin between organisations with as many tasks running', () => {
    const queue = new FairQueue<string>({ threads: 3 });
    for (const org of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) queue.push(org, `${org}${i}`);
    const started = startAll(queue, 0);
    expect(started.map((s) => s.item)).toEqual(['a0', 'b0', 'c0']);
    queue.finish(started[1]!, 1); // b's task ends first: b has the fewest running
    expect(queue.next(1)?.item).toBe('b1');
    queue.finish(started[0]!, 2);
    queue.finish(started[2]!, 2);
    // a and c both have none running: the one served longest ago (a) goes first
    expect(queue.next(2)?.item).toBe('a1');
    expect(queue.next(2)?.item).toBe('c1');
  });

  it('is work-conserving: an organisation alone under its budget gets every thread', () => {
    const queue = new FairQueue<string>({ threads: 4 });
    for (let i = 0; i < 10; i++) queue.push('a', `a${i}`);
    expect(startAll(queue, 0)).toHaveLength(4);
  });

  it('holds an organisation over its budget to T−1 threads, alone too, and gives the last one to another', () => {
    const queue = new FairQueue<string>({ threads: 3 });
    for (let i = 0; i < 10; i++) queue.push('a', `a${i}`);
    const first = startAll(queue, 0);
    expect(first).toHaveLength(3);
    // Each ran past the budget's share: a is over ORG_CPU_BUDGET_MS in the window.
    const end = ORG_CPU_BUDGET_MS;
    for (const s of first) queue.finish(s, end);
    expect(queue.spentMs('a', end)).toBeGreaterThan(ORG_CPU_BUDGET_MS);
    expect(startAll(queue, end)).toHaveLength(2);
    queue.push('b', 'b0');
    expect(queue.next(end)?.item).toBe('b0');
    expect(queue.next(end)).toBeNull();
  });

  it('keeps every thread for an organisation over its budget whose tasks are short (another waits for one of them at most)', () => {
    const queue = new FairQueue<string>({ threads: 2 });
    for (let i = 0; i < 100; i++) queue.push('a', `a${i}`);
    // Many short tasks: far over the budget in the window, none of them long.
    let now = 0;
    while (queue.spentMs('a', now) <= ORG_CPU_BUDGET_MS) {
      const started = startAll(queue, now);
      expect(started).toHaveLength(2);
      now += SHORT_TASK_MS / 3;
      for (const s of started) queue.finish(s, now);
    }
    expect(startAll(queue, now)).toHaveLength(2);
  });

  it('counts a running task’s time, and forgets time that left the window', () => {
    const queue = new FairQueue<string>({ threads: 2 });
    queue.push('a', 'a0');
    const [a0] = startAll(queue, 0);
    expect(queue.spentMs('a', ORG_CPU_BUDGET_MS + 1)).toBe(ORG_CPU_BUDGET_MS + 1);
    queue.finish(a0!, ORG_CPU_BUDGET_MS + 1);
    for (let i = 1; i < 4; i++) queue.push('a', `a${i}`);
    expect(startAll(queue, ORG_CPU_BUDGET_MS + 1)).toHaveLength(1);
    const later = ORG_CPU_BUDGET_MS + 1 + ORG_CPU_WINDOW_MS;
    expect(queue.spentMs('a', later)).toBe(later - (ORG_CPU_BUDGET_MS + 1)); // only the task still running
  });

  it('needs at least 2 threads, so that T−1 is never 0', () => {
    expect(() => new FairQueue({ threads: 1 })).toThrow(RangeError);
  });
});
