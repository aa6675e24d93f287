import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { RedisConnection } from '@gatehook/core/redis';
import { counterKey } from '../counter-key';
import type { CounterOutcome } from '../consume';
import type { CounterBatch, CounterStore, StoreDecision } from './store';

const SCRIPT = readFileSync(path.join(__dirname, '../lua/check-and-consume.lua'), 'utf8');
const SCRIPT_SHA = createHash('sha1').update(SCRIPT).digest('hex');

/**
 * A check Redis did not answer in time. Unlike an unreachable Redis, the script was sent and may still run there
 * (and count the call): a fallback must not count the call a second time.
 */
export class CounterStoreTimeout extends Error {
  override name = 'CounterStoreTimeout';
  constructor(ms: number) {
    super(`rate limit store did not answer within ${ms} ms`);
  }
}

export interface RedisStoreOptions {
  /** Key prefix (REDIS_PREFIX), so one Redis serves several deployments. */
  prefix: string;
  /** A check that takes longer fails (and the limiter's fail mode decides). */
  timeoutMs?: number;
}

/**
 * One shared counter per (rule, key) in Redis, checked and consumed by one Lua script per call
 * (lua/check-and-consume.lua), on the server's clock. Every key of a call carries the organisation's hash tag.
 * Errors (unreachable, timeout) are thrown for the limiter to handle by its fail mode.
 */
export class RedisCounterStore implements CounterStore {
  readonly kind = 'redis' as const;
  private readonly timeoutMs: number;

  constructor(
    private readonly redis: RedisConnection,
    private readonly options: RedisStoreOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 250;
  }

  async checkAndConsume(batch: CounterBatch): Promise<StoreDecision> {
    const keys = batch.owners.map((owner, i) => counterKey(this.options.prefix, batch.orgId, owner, batch.keys[i]!));
    const args: (string | number)[] = [batch.cost];
    for (const limit of batch.limits) args.push(limit.calls, limit.windowMs, limit.deny ? 1 : 0);
    const reply = (await this.withinTimeout(this.run(keys, args))) as number[];
    const outcomes: CounterOutcome[] = [];
    for (let i = 2; i < reply.length; i += 4) {
      outcomes.push({
        remaining: reply[i]!,
        resetAt: reply[i + 1]!,
        exceeded: reply[i + 2] === 1,
        firstExceeded: reply[i + 3] === 1,
      });
    }
    return { now: reply[0]!, allowed: reply[1] === 1, outcomes };
  }

  private withinTimeout<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CounterStoreTimeout(this.timeoutMs)), this.timeoutMs);
    });
    promise.catch(() => undefined); // a late failure after the timeout is nobody's to handle
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  // EVALSHA first; a Redis that does not know the script yet (new, restarted, flushed) gets it once by EVAL.
  private async run(keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.redis.evalsha(SCRIPT_SHA, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.redis.eval(SCRIPT, keys.length, ...keys, ...args);
    }
  }

  async close(): Promise<void> {
    // The connection belongs to the caller.
  }
}

/** The script's SHA1, for benchmarks that call it with redis-benchmark. */
export const CHECK_AND_CONSUME_SHA = SCRIPT_SHA;
