import { Admission } from './admission';

describe('Admission', () => {
  it('lets runs in while their places are free, and the next ones in order as places come back', async () => {
    const admission = new Admission(3);
    expect(admission.tryTake(2)).toBe(true);
    const order: string[] = [];
    const big = admission.take(2).then(() => order.push('big'));
    const small = admission.take(1).then(() => order.push('small'));
    // One place is free, but the run of two waits first: the run of one does not overtake it.
    expect(admission.tryTake(1)).toBe(false);
    expect(admission.waiting).toBe(2);
    admission.give(1);
    await big;
    expect(order).toEqual(['big']);
    expect(admission.inUse).toBe(3);
    admission.give(1);
    await small;
    expect(order).toEqual(['big', 'small']);
    expect(admission.inUse).toBe(3);
    expect(admission.waiting).toBe(0);
  });

  it('lets a run larger than the capacity in once nothing else holds a place', async () => {
    const admission = new Admission(2);
    expect(admission.tryTake(1)).toBe(true);
    let admitted = false;
    const oversized = admission.take(5).then(() => (admitted = true));
    expect(admission.waiting).toBe(1);
    expect(admitted).toBe(false);
    admission.give(1);
    await oversized;
    expect(admission.inUse).toBe(5);
    expect(admission.tryTake(1)).toBe(false);
    admission.give(5);
    expect(admission.inUse).toBe(0);
  });

  it('takes and gives nothing for empty runs, and never counts below zero', () => {
    const admission = new Admission(1);
    expect(admission.tryTake(0)).toBe(true);
    admission.give(3);
    expect(admission.inUse).toBe(0);
    expect(admission.tryTake(1)).toBe(true);
  });

  it('a bounded wait gives up holding nothing, and lets in the runs it kept waiting behind it', async () => {
    jest.useFakeTimers();
    try {
      const admission = new Admission(2);
      expect(admission.tryTake(1)).toBe(true);
      const big = admission.takeWithin(2, 1000);
      let smallIn = false;
      const small = admission.take(1).then(() => (smallIn = true));
      expect(admission.waiting).toBe(2);
      jest.advanceTimersByTime(1000);
      expect(await big).toBe(false);
      await small;
      expect(smallIn).toBe(true);
      expect(admission.inUse).toBe(2);
      expect(admission.waiting).toBe(0);
      admission.give(1);
      expect(await admission.takeWithin(1, 1000)).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('is full while every place is taken, and idle only when no place is taken and nobody waits', async () => {
    const admission = new Admission(1);
    expect(admission.idle).toBe(true);
    expect(admission.tryTake(1)).toBe(true);
    expect(admission.full).toBe(true);
    expect(admission.idle).toBe(false);
    const next = admission.take(1);
    admission.give(1); // handed straight to the waiter: still taken
    await next;
    expect(admission.idle).toBe(false);
    admission.give(1);
    expect(admission.full).toBe(false);
    expect(admission.idle).toBe(true);
  });

  it("shares places fairly between keys: a burst of one organisation's runs does not keep another's out", async () => {
    const admission = new Admission(4);
    expect(admission.tryTake(4, 'A')).toBe(true);
    const order: string[] = [];
    const burst = [1, 2, 3, 4].map((n) => admission.take(1, 'A').then(() => order.push(`A${n}`)));
    const other = admission.take(1, 'B').then(() => order.push('B1'));
    admission.give(1, 'A'); // A holds 3, B none: B's run goes first though A's came earlier
    await other;
    expect(order).toEqual(['B1']);
    admission.give(1, 'A');
    await burst[0];
    expect(order).toEqual(['B1', 'A1']);
    expect(admission.heldOf('A')).toBe(3);
    expect(admission.heldOf('B')).toBe(1);
    admission.give(3, 'A');
    admission.give(1, 'B');
    await Promise.all(burst);
    expect(order).toEqual(['B1', 'A1', 'A2', 'A3', 'A4']);
  });

  it('the run chosen next is not overtaken while it waits for enough places', async () => {
    const admission = new Admission(4);
    expect(admission.tryTake(3, 'A')).toBe(true);
    const order: string[] = [];
    const big = admission.take(4, 'B').then(() => order.push('B4'));
    const small = admission.take(1, 'C').then(() => order.push('C1'));
    admission.give(1, 'A'); // two places free, B's run of four does not fit, and C's run of one waits behind it
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    admission.give(2, 'A');
    await big;
    expect(order).toEqual(['B4']);
    admission.give(4, 'B');
    await small;
    expect(order).toEqual(['B4', 'C1']);
  });
});
