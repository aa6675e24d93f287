import { GroupCommit } from './group-commit';

/** A GroupCommit whose flushes record their batches and answer each item doubled. */
function recording(options: ConstructorParameters<typeof GroupCommit<number, number>>[1]) {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(async (items) => {
    batches.push(items);
    await new Promise((resolve) => setImmediate(resolve));
    return items.map((i) => i * 2);
  }, options);
  return { commit, batches };
}

describe('GroupCommit', () => {
  it('flushes at once when idle, and gathers what arrives while a flush runs into the next', async () => {
    const { commit, batches } = recording({ maxBatch: 10, maxConcurrent: 1 });
    const results = await Promise.all([1, 2, 3].map((i) => commit.submit(i)));
    expect(results).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1], [2, 3]]);
    // Idle again: the next item goes alone, at once.
    expect(await commit.submit(4)).toBe(8);
    expect(batches.at(-1)).toEqual([4]);
  });

  it('keeps a batch within maxBatch and runs up to maxConcurrent flushes', async () => {
    const { commit, batches } = recording({ maxBatch: 2, maxConcurrent: 2 });
    await Promise.all([1, 2, 3, 4, 5].map((i) => commit.submit(i)));
    expect(batches).toEqual([[1], [2], [3, 4], [5]]);
  });

  it('with weigh, keeps a batch within maxBatch of weight, an item heavier than that going alone', async () => {
    const { commit, batches } = recording({ maxBatch: 10, maxConcurrent: 1, weigh: (i) => i });
    await Promise.all([1, 4, 5, 2, 12, 3].map((i) => commit.submit(i)));
    expect(batches).toEqual([[1], [4, 5], [2], [12], [3]]);
  });

  it('calls onIdle each time its last flush ends with nothing waiting', async () => {
    let idle = 0;
    const { commit, batches } = recording({ maxBatch: 10, maxConcurrent: 1, onIdle: () => (idle += 1) });
    const first = [1, 2, 3].map((i) => commit.submit(i));
    expect(idle).toBe(0);
    await Promise.all(first);
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[1], [2, 3]]);
    expect(idle).toBe(1);
    await commit.submit(4);
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(2);
  });

  it('withoutResults: each submit resolves once the flush that carried it has, and rejects with it', async () => {
    const batches: string[][] = [];
    let fail = false;
    const commit = GroupCommit.withoutResults(
      async (items: string[]) => {
        batches.push(items);
        await new Promise((resolve) => setImmediate(resolve));
        if (fail) throw new Error('store down');
      },
      { maxBatch: 10, maxConcurrent: 1 },
    );
    let done = 0;
    await Promise.all(['a', 'b', 'c'].map((i) => commit.submit(i).then(() => (done += 1))));
    expect(done).toBe(3);
    expect(batches).toEqual([['a'], ['b', 'c']]);
    fail = true;
    await expect(commit.submit('d')).rejects.toThrow('store down');
  });

  it('rejects every item of a flush that fails, and goes on with the next', async () => {
    let fail = true;
    const commit = new GroupCommit<number, number>(
      async (items) => {
        if (fail) throw new Error('store down');
        return items;
      },
      { maxBatch: 10, maxConcurrent: 1 },
    );
    const first = commit.submit(1);
    await expect(first).rejects.toThrow('store down');
    fail = false;
    expect(await commit.submit(2)).toBe(2);
  });

  it('with minIntervalMs, starts the next flush no sooner after the previous one, carrying all that came meanwhile', async () => {
    const { commit, batches } = recording({ maxBatch: 10, maxConcurrent: 1, minIntervalMs: 1_000 });
    expect(await commit.submit(1)).toBe(2);
    // The first flush is over, but it started less than a second ago: these wait and go together.
    const later = await Promise.all([2, 3, 4].map((i) => commit.submit(i)));
    expect(later).toEqual([4, 6, 8]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
    expect(commit.pending).toBe(0);
  });

  describe('minIntervalMs follows how often items come', () => {
    beforeEach(() => jest.useFakeTimers({ now: 0 }));
    afterEach(() => jest.useRealTimers());

    /** Submits at the given gaps (ms) on the fake clock; what each flush carried and when it started. */
    async function stream(gaps: number[]) {
      const flushes: { at: number; items: number[] }[] = [];
      const commit = new GroupCommit<number, number>(
        async (items) => {
          flushes.push({ at: performance.now(), items });
          return items;
        },
        { maxBatch: 100, maxConcurrent: 1, minIntervalMs: 25 },
      );
      const submitted: Promise<number>[] = [];
      for (const [i, gap] of gaps.entries()) {
        await jest.advanceTimersByTimeAsync(gap);
        submitted.push(commit.submit(i));
      }
      await jest.advanceTimersByTimeAsync(100);
      await Promise.all(submitted);
      return flushes;
    }

    it('gathers a steady stream: an item every 5 ms goes out with the others of its 25 ms', async () => {
      const flushes = await stream(Array.from({ length: 100 }, () => 5));
      expect(flushes.flatMap((f) => f.items)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      expect(flushes.length).toBeLessThanOrEqual(25);
    });

    it('lets a thin stream go at once: two clients a millisecond apart, ten times a second, are never held for the interval', async () => {
      // As two organisations' open loops at 10/s each, in step: the second of each pair comes right after a flush.
      const flushes = await stream(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 99 : 1)));
      expect(flushes.flatMap((f) => f.items)).toEqual(Array.from({ length: 40 }, (_, i) => i));
      // Once the average gap has learnt the stream (a few pairs), every item goes out at the instant it comes: no
      // flush waits for the rest of an interval.
      const submittedAt = (item: number) => Math.floor(item / 2) * 100 + 99 + (item % 2);
      const learnt = flushes.filter((f) => f.items[0]! >= 8);
      expect(learnt.map((f) => f.items)).toEqual(Array.from({ length: 32 }, (_, i) => [i + 8]));
      expect(learnt.map((f) => f.at)).toEqual(learnt.map((f) => submittedAt(f.items[0]!)));
    });
  });
});
