import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { paceKey, turnIntervalMicros, WebhookPace } from './webhook-pace';

const prefix = `test_${randomBytes(6).toString('hex')}`;
const redis = new Redis(TEST_REDIS_URL);
const second = new Redis(TEST_REDIS_URL);

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await Promise.all([redis.quit(), second.quit()]);
});

/**
 * Every instant at which a turn was granted, on the Redis clock in milliseconds (what the guarantee is about: the
 * instants this process sees the answers move with its event loop), taking turns as fast as it can for `ms`.
 */
async function grantsOver(
  paces: WebhookPace[],
  orgId: string,
  webhookId: string,
  perSecond: number,
  ms: number,
  takers: number,
): Promise<number[]> {
  const grants: number[] = [];
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: takers }, async (_, i) => {
      const pace = paces[i % paces.length]!;
      while (Date.now() < end) {
        const { at, grantedMicros } = await pace.takeAt(orgId, webhookId, perSecond);
        if (at === null) grants.push(grantedMicros! / 1000);
        else await new Promise((r) => setTimeout(r, Math.min(at.getTime() - Date.now(), end - Date.now())));
      }
    }),
  );
  return grants.sort((a, b) => a - b);
}

function mostInOneSecond(times: number[]): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end += 1) {
    while (times[end]! - times[start]! >= 1000) start += 1;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

describe('WebhookPace', () => {
  it('keys each webhook under its organisation hash tag', () => {
    expect(paceKey('gh', 'org-1', 'wh-1')).toBe('gh:pace:{org-1}:wh-1');
    // 1/rate and 2% (TURN_SPACING_PERCENT), rounded up.
    expect(turnIntervalMicros(50)).toBe(20_400);
    expect(turnIntervalMicros(3)).toBe(340_000);
    expect(turnIntervalMicros(10_000)).toBe(102);
  });

  it('grants at most the rate in any one-second window, shared by two connections, and close to it', async () => {
    const paces = [new WebhookPace(redis, { prefix }), new WebhookPace(second, { prefix })];
    const grants = await grantsOver(paces, randomUUID(), randomUUID(), 20, 2_500, 8);
    expect(mostInOneSecond(grants)).toBeLessThanOrEqual(20);
    // 2.5 s at 20/s less the 2% margin is 50; on a loaded machine timers come late, so a little under.
    expect(grants.length).toBeGreaterThanOrEqual(40);
  });

  it('spreads the requests it turns away over their turns instead of one instant', async () => {
    const pace = new WebhookPace(redis, { prefix });
    const orgId = randomUUID();
    const webhookId = randomUUID();
    // 2 a second: a turn is 500 ms away, too far to wait for in place.
    const answers = await Promise.all(Array.from({ length: 10 }, () => pace.take(orgId, webhookId, 2)));
    const later = answers
      .filter((a): a is Date => a !== null)
      .map((a) => a.getTime())
      .sort((a, b) => a - b);
    expect(answers.filter((a) => a === null)).toHaveLength(1);
    expect(later).toHaveLength(9);
    for (let i = 1; i < later.length; i += 1) expect(later[i]! - later[i - 1]!).toBeGreaterThanOrEqual(490);
    expect(later.at(-1)! - Date.now()).toBeLessThanOrEqual(5_000);
  });

  it('keeps webhooks apart', async () => {
    const pace = new WebhookPace(redis, { prefix });
    const orgId = randomUUID();
    expect(await pace.take(orgId, 'a', 1)).toBeNull();
    expect(await pace.take(orgId, 'a', 1)).not.toBeNull();
    expect(await pace.take(orgId, 'b', 1)).toBeNull();
  });

  it('fails open, with one warning, when Redis cannot be reached', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      lazyConnect: true,
      retryStrategy: () => null,
    });
    dead.on('error', () => undefined);
    const warn = jest.fn();
    const pace = new WebhookPace(dead, { prefix, timeoutMs: 200, logger: { warn } as never });
    expect(await pace.take('o', 'w', 1)).toBeNull();
    expect(await pace.take('o', 'w', 1)).toBeNull();
    expect(warn).toHaveBeenCalledTimes(1);
    dead.disconnect();
  });
});
