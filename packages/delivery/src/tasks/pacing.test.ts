import { checkTaskWindow, TASK_UNTIL_SLACK_MS } from './window';
import { isLastPage, nextStepAt, pageLimit, sendChunk, sendSlots, slotsOf, stepLimit } from './pacing';
import { TASK_PACING_HORIZON_MS, TASK_WAIT_MS } from '../tunables';

const now = new Date('2026-11-24T12:00:00.000Z');
const at = (offsetMs: number) => new Date(now.getTime() + offsetMs);
const DAY = 86_400_000;

describe('checkTaskWindow (CONTRACT 11)', () => {
  it('accepts a window inside the retention that ends now or within a minute', () => {
    expect(checkTaskWindow({ since: at(-DAY), until: now }, now, 30)).toEqual([]);
    expect(checkTaskWindow({ since: at(-30 * DAY), until: at(TASK_UNTIL_SLACK_MS) }, now, 30)).toEqual([]);
  });

  it('names since when it is not before until', () => {
    expect(checkTaskWindow({ since: now, until: now }, now, 30)).toEqual([
      { path: 'since', message: 'must be before until' },
    ]);
    expect(checkTaskWindow({ since: at(-1000), until: at(-2000) }, now, 30).map((i) => i.path)).toEqual(['since']);
  });

  it('names until when it is more than a minute in the future', () => {
    expect(
      checkTaskWindow({ since: at(-DAY), until: at(TASK_UNTIL_SLACK_MS + 1) }, now, 30).map((i) => i.path),
    ).toEqual(['until']);
  });

  it('names since when it is older than the retention', () => {
    expect(checkTaskWindow({ since: at(-30 * DAY - 1), until: now }, now, 30).map((i) => i.path)).toEqual(['since']);
    expect(checkTaskWindow({ since: at(-2 * DAY), until: now }, now, 1)[0]!.message).toMatch(/last 1 days/);
  });
});

describe('pacing', () => {
  it('takes only the room left under the backlog limit, at most a page, and waits when there is none', () => {
    expect(pageLimit({ due: 0, buffered: 0 }, 1, 100, 20)).toBe(20);
    expect(pageLimit({ due: 15, buffered: 0 }, 1, 100, 20)).toBe(5);
    expect(pageLimit({ due: 20, buffered: 0 }, 1, 100, 20)).toBe(0);
    expect(pageLimit({ due: 0, buffered: 0 }, 1, 10, 20)).toBe(10);
  });

  it('counts buffered batch items as the deliveries they will make', () => {
    // max_events 100: 250 buffered events are 3 deliveries; 17 deliveries of room are 1700 events, capped by a page.
    expect(pageLimit({ due: 0, buffered: 250 }, 100, 100, 20)).toBe(100);
    expect(pageLimit({ due: 19, buffered: 1 }, 100, 100, 20)).toBe(0);
    expect(pageLimit({ due: 18, buffered: 50 }, 100, 1000, 20)).toBe(100);
  });

  it('a short page is the last one', () => {
    expect(isLastPage(99, 100)).toBe(true);
    expect(isLastPage(0, 100)).toBe(true);
    expect(isLastPage(100, 100)).toBe(false);
  });
});

describe('pacing by send rate (TASK_SEND_RATE)', () => {
  const limits = { perDelivery: 1, pageSize: 100, maxBacklog: 20, now };
  const idle = { due: 0, buffered: 0 };

  it('without a rate, takes the room under the backlog limit, due now', () => {
    expect(stepLimit({ ...limits, backlog: { due: 15, buffered: 0 }, rate: 0, pacedUntil: null })).toEqual({
      items: 5,
    });
    expect(stepLimit({ ...limits, backlog: { due: 20, buffered: 0 }, rate: 0, pacedUntil: null })).toEqual({
      waitUntil: at(TASK_WAIT_MS),
    });
  });

  it('schedules one horizon of sends ahead, at most a page, and waits while more than half of it is scheduled', () => {
    expect(stepLimit({ ...limits, backlog: idle, rate: 50, pacedUntil: null })).toEqual({ items: 50 });
    expect(stepLimit({ ...limits, backlog: idle, rate: 500, pacedUntil: null })).toEqual({ items: 100 });
    // 400 ms already scheduled: 600 ms of room.
    expect(stepLimit({ ...limits, backlog: idle, rate: 50, pacedUntil: at(400) })).toEqual({ items: 30 });
    expect(stepLimit({ ...limits, backlog: idle, rate: 50, pacedUntil: at(600) })).toEqual({
      waitUntil: at(600 - TASK_PACING_HORIZON_MS / 2),
    });
  });

  it('a clock in the past counts as now: a task that waited does not catch up', () => {
    expect(stepLimit({ ...limits, backlog: idle, rate: 50, pacedUntil: at(-60_000) })).toEqual({ items: 50 });
    expect(sendSlots(2, at(-60_000), now, 10).dueAt).toEqual([now, at(100)]);
  });

  it('still waits for a receiver that is behind, whatever the rate', () => {
    expect(stepLimit({ ...limits, backlog: { due: 20, buffered: 0 }, rate: 50, pacedUntil: null })).toEqual({
      waitUntil: at(TASK_WAIT_MS),
    });
    // A batching webhook: 100 events a delivery, so 50 deliveries of room are capped by the page.
    expect(
      stepLimit({
        ...limits,
        perDelivery: 100,
        pageSize: 1000,
        backlog: { due: 0, buffered: 150 },
        rate: 5,
        pacedUntil: null,
      }),
    ).toEqual({ items: 500 });
  });

  it('spaces sends in chunks of one tick, so no window of W seconds holds more than rate × W + a chunk', () => {
    expect(sendChunk(1)).toBe(1);
    expect(sendChunk(100)).toBe(5);
    expect(sendChunk(1000)).toBe(50);
    const { dueAt, pacedUntil } = sendSlots(12, null, now, 100);
    expect(dueAt.map((d) => d.getTime() - now.getTime())).toEqual([0, 0, 0, 0, 0, 50, 50, 50, 50, 50, 100, 100]);
    expect(pacedUntil).toEqual(at(120));
    // Continued from the clock by the next step: the third chunk is completed 30 ms on, the fourth 50 ms later.
    const next = sendSlots(8, pacedUntil, now, 100);
    expect(next.dueAt.map((d) => d.getTime() - now.getTime())).toEqual([120, 120, 120, 120, 120, 170, 170, 170]);

    for (const rate of [1, 7, 20, 100, 333, 1000]) {
      const times = sendSlots(3 * rate, null, now, rate).dueAt.map((d) => d.getTime());
      for (const windowMs of [50, 500, 1000]) {
        const most = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + windowMs).length));
        expect(most).toBeLessThanOrEqual((rate * windowMs) / 1000 + sendChunk(rate));
      }
    }
  });

  it('the next step comes once less than half of the horizon is scheduled ahead', () => {
    expect(nextStepAt(null, now)).toEqual(now);
    expect(nextStepAt(at(200), now)).toEqual(now);
    expect(nextStepAt(at(1000), now)).toEqual(at(1000 - TASK_PACING_HORIZON_MS / 2));
  });

  it('groups deliveries due together into one job each', () => {
    expect(
      slotsOf([
        { id: 'a', dueAt: now },
        { id: 'b', dueAt: now },
        { id: 'c', dueAt: at(50) },
      ]),
    ).toEqual([
      { ids: ['a', 'b'], dueAt: now },
      { ids: ['c'], dueAt: at(50) },
    ]);
  });
});
