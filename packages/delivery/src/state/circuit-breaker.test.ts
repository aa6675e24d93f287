import { streakChanges, trippedBreakers } from './circuit-breaker';

const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

describe('streakChanges', () => {
  it('starts a streak at the first failure and ignores 429 and 410', () => {
    expect(
      streakChanges([
        { webhookId: 'w', effect: 'neutral', at: t(1) },
        { webhookId: 'w', effect: 'failure', at: t(3) },
        { webhookId: 'w', effect: 'failure', at: t(2) },
        { webhookId: 'x', effect: 'gone', at: t(2) },
      ]),
    ).toEqual([{ webhookId: 'w', cleared: false, failingFrom: t(2) }]);
  });

  it('ends a streak at a success and restarts it at the next failure, in finishing order', () => {
    expect(
      streakChanges([
        { webhookId: 'w', effect: 'failure', at: t(1) },
        { webhookId: 'w', effect: 'failure', at: t(5) },
        { webhookId: 'w', effect: 'success', at: t(3) },
      ]),
    ).toEqual([{ webhookId: 'w', cleared: true, failingFrom: t(5) }]);
    expect(
      streakChanges([
        { webhookId: 'w', effect: 'failure', at: t(1) },
        { webhookId: 'w', effect: 'success', at: t(2) },
      ]),
    ).toEqual([{ webhookId: 'w', cleared: true, failingFrom: null }]);
  });
});

describe('trippedBreakers', () => {
  it('trips when the stored streak start is older than the breaker', () => {
    const changes = [{ webhookId: 'w', cleared: false, failingFrom: t(100) }];
    expect(trippedBreakers(changes, new Map([['w', t(0)]]), t(100), 100)).toEqual(['w']);
    expect(trippedBreakers(changes, new Map([['w', t(1)]]), t(100), 100)).toEqual([]);
  });

  it('counts a streak from this batch when none was stored, or when a success restarted it', () => {
    expect(
      trippedBreakers([{ webhookId: 'w', cleared: false, failingFrom: t(10) }], new Map([['w', null]]), t(10), 0),
    ).toEqual(['w']);
    expect(
      trippedBreakers([{ webhookId: 'w', cleared: true, failingFrom: t(10) }], new Map([['w', t(0)]]), t(50), 100),
    ).toEqual([]);
    expect(
      trippedBreakers([{ webhookId: 'w', cleared: true, failingFrom: null }], new Map([['w', t(0)]]), t(500), 100),
    ).toEqual([]);
  });
});
