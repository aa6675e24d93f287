import { AdaptiveLimit, answerSignal } from './adaptive-limit';
import { BACKOFF_RATIO, INITIAL_ENDPOINT_LIMIT, QUICK_ANSWER_MS } from '../tunables';

describe('AdaptiveLimit', () => {
  it('starts at its initial limit, within [1, max]', () => {
    expect(new AdaptiveLimit(50).current).toBe(INITIAL_ENDPOINT_LIMIT);
    expect(new AdaptiveLimit(1).current).toBe(1);
    expect(new AdaptiveLimit(50, 0).current).toBe(1);
  });

  it('grows by one for each quick answer while at least half of it is in use, up to its ceiling', () => {
    const limit = new AdaptiveLimit(12, 10);
    limit.update('quick', 10);
    expect(limit.current).toBe(11);
    limit.update('quick', 6);
    expect(limit.current).toBe(12);
    limit.update('quick', 12);
    expect(limit.current).toBe(12); // the ceiling (DELIVERY_ENDPOINT_CONCURRENCY)
  });

  it('does not grow while most of it is unused, nor on slow answers, nor on answers that say nothing of capacity', () => {
    const limit = new AdaptiveLimit(50, 10);
    limit.update('quick', 4); // 4 in flight of 10: there is no demand to grow for
    limit.update('slow', 10);
    limit.update('ignored', 10);
    expect(limit.current).toBe(10);
  });

  it('falls by BACKOFF_RATIO on each sign of overload, and never below 1', () => {
    const limit = new AdaptiveLimit(50, 20);
    limit.update('overloaded', 20);
    expect(limit.current).toBe(Math.floor(20 * BACKOFF_RATIO));
    for (let i = 0; i < 100; i += 1) limit.update('overloaded', 1);
    expect(limit.current).toBe(1);
    limit.update('quick', 1); // one in flight of one: it climbs back
    expect(limit.current).toBe(2);
  });

  it('reads a quick 2xx, a slow 2xx, overload (timeout, connection errors, 429, 5xx) and the rest', () => {
    expect(answerSignal({ statusCode: 204, error: null, durationMs: 5 })).toBe('quick');
    expect(answerSignal({ statusCode: 200, error: null, durationMs: QUICK_ANSWER_MS + 1 })).toBe('slow');
    expect(answerSignal({ statusCode: 0, error: 'timeout', durationMs: 15_000 })).toBe('overloaded');
    expect(answerSignal({ statusCode: 0, error: 'connection_refused', durationMs: 1 })).toBe('overloaded');
    expect(answerSignal({ statusCode: 0, error: 'connection_reset', durationMs: 1 })).toBe('overloaded');
    expect(answerSignal({ statusCode: 429, error: 'http_429', durationMs: 3 })).toBe('overloaded');
    expect(answerSignal({ statusCode: 503, error: 'http_503', durationMs: 3 })).toBe('overloaded');
    expect(answerSignal({ statusCode: 404, error: 'http_404', durationMs: 3 })).toBe('ignored');
    expect(answerSignal({ statusCode: 0, error: 'blocked_address', durationMs: 0 })).toBe('ignored');
    expect(answerSignal({ statusCode: 0, error: 'tls_error', durationMs: 2 })).toBe('ignored');
    // The service's own proxy failing says nothing of the receiver (CONTRACT 18).
    expect(answerSignal({ statusCode: 0, error: 'proxy_error', durationMs: 2 })).toBe('ignored');
  });
});
