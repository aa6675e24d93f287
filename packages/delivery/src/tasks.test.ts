import { checkTaskWindow, isLastPage, pageLimit, TASK_UNTIL_SLACK_MS } from './tasks';

const now = new Date('2026-11-24T12:00:00.000Z');
const at = (offsetMs: number) => new Date(now.getTime() + offsetMs);
const DAY = 86_400_000;

describe('checkTaskWindow (CONTRACT 11)', () => {
  it('accepts a window inside the retention that ends now or within a minute', () => {
    expect(checkTaskWindow({ since: at(-DAY), until: now }, now, 30)).toEqual([]);
    expect(checkTaskWindow({ since: at(-30 * DAY), until: at(TASK_UNTIL_SLACK_MS) }, now, 30)).toEqual([]);
  });

  it('names since when it is not before until', () => {
    expect(checkTaskWindow({ since: now, until: now }, now, 30)).toEqual([{ path: 'since', message: 'must be before until' }]);
    expect(checkTaskWindow({ since: at(-1000), until: at(-2000) }, now, 30).map((i) => i.path)).toEqual(['since']);
  });

  it('names until when it is more than a minute in the future', () => {
    expect(checkTaskWindow({ since: at(-DAY), until: at(TASK_UNTIL_SLACK_MS + 1) }, now, 30).map((i) => i.path)).toEqual(['until']);
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
