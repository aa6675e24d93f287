import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '@gatehook/core/logger';
import { INLINE_TRIES, INLINE_WAIT_MS, PACE_TIMEOUT_MS, TURN_SPACING_PERCENT, WARN_INTERVAL_MS } from '../tunables';

const SCRIPT = readFileSync(path.join(__dirname, '../lua/take-webhook-turn-1.lua'), 'utf8');
/** The script's command name on the connection (ioredis runs it by EVALSHA, loading it once when Redis lacks it). */
const COMMAND = 'gatehookTakeWebhookTurn';

type WithTurnCommand = {
  [COMMAND](key: string, intervalMicros: number, inPlaceMicros: number): Promise<[number, number, number]>;
};

/** The Redis key of a webhook's pace; hash-tagged by organisation like every per-organisation key (Redis Cluster). */
export function paceKey(prefix: string, orgId: string, webhookId: string): string {
  return `${prefix}:pace:{${orgId}}:${webhookId}`;
}

/** Microseconds between two turns at `perSecond`, rounded up, so that a second never holds more than `perSecond`. */
export function turnIntervalMicros(perSecond: number): number {
  return Math.ceil((1_000_000 * TURN_SPACING_PERCENT) / (100 * perSecond));
}

/**
 * The per-webhook request rate (`rate_limit_per_second`, CONTRACT 18), shared by every worker through one Redis
 * script call per request (lua/take-webhook-turn-1.lua): turns evenly spaced, no burst above the rate. A request
 * without a turn is told when to come back; it waits, it never fails. Redis unreachable or slow: the turn is granted
 * (fail open, with a warning), since holding every rate-limited webhook's deliveries for a Redis outage would turn
 * a pacing feature into an outage of delivery.
 */
export class WebhookPace {
  private lastWarning = 0;
  private readonly redis: WithTurnCommand;

  constructor(
    redis: Redis | Cluster,
    private readonly options: { prefix: string; timeoutMs?: number; logger?: Logger },
  ) {
    if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: SCRIPT });
    this.redis = redis as unknown as WithTurnCommand;
  }

  /** Takes a turn for one request to the webhook: null when it may go now, else when to come back. */
  async take(orgId: string, webhookId: string, perSecond: number): Promise<Date | null> {
    return (await this.takeAt(orgId, webhookId, perSecond)).at;
  }

  /**
   * {@link take}, also saying on the Redis clock when the turn was granted (microseconds; null when it was not, or
   * when Redis did not answer): what the spacing guarantee is about.
   */
  async takeAt(
    orgId: string,
    webhookId: string,
    perSecond: number,
  ): Promise<{ at: Date | null; grantedMicros: number | null }> {
    const key = paceKey(this.options.prefix, orgId, webhookId);
    const interval = turnIntervalMicros(perSecond);
    const inPlaceMicros = Math.min(INLINE_WAIT_MS * 1000, 2 * interval);
    try {
      for (let tries = 1; ; tries += 1) {
        // The last try does not wait in place: told to wait, it goes back to the queue at its place in the line.
        const [granted, waitMicros, serverMicros] = await this.withinTimeout(
          this.redis[COMMAND](key, interval, tries < INLINE_TRIES ? inPlaceMicros : -1),
        );
        if (granted === 1) return { at: null, grantedMicros: serverMicros };
        const waitMs = Math.max(1, Math.ceil(waitMicros / 1000));
        if (tries >= INLINE_TRIES || waitMicros > inPlaceMicros)
          return { at: new Date(Date.now() + waitMs), grantedMicros: null };
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    } catch (error) {
      const now = Date.now();
      if (now - this.lastWarning >= WARN_INTERVAL_MS) {
        this.lastWarning = now;
        this.options.logger?.warn(
          { err: (error as Error).message },
          'webhook rate limit store unavailable: sending without pacing (fail open)',
        );
      }
      return { at: null, grantedMicros: null };
    }
  }

  private withinTimeout<T>(promise: Promise<T>): Promise<T> {
    const ms = this.options.timeoutMs ?? PACE_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`webhook pace store did not answer within ${ms} ms`)), ms);
    });
    promise.catch(() => undefined); // a late failure after the timeout is nobody's to handle
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }
}
