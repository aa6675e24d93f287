import { LRUCache } from 'lru-cache';
import { requestToken, type DestinationAuth, type TokenExchange, type TokenOutcome } from './token-request';

/** Lifetime assumed for a token whose endpoint gave no `expires_in` (CONTRACT 20). */
export const DEFAULT_TOKEN_LIFETIME_S = 300;
/** A token is renewed this long before it expires, or at half its lifetime when that is shorter. */
export const TOKEN_RENEW_BEFORE_S = 60;
/** Tokens kept per process (one per webhook and version of its `auth`); the least recently used goes first. */
export const TOKEN_CACHE_MAX = 10_000;

/** What a token fetch came to, for the metric of token fetches by outcome. */
export type TokenFetchOutcome = 'success' | 'failure';

interface CachedToken {
  accessToken: string;
  renewAt: number;
  expiresAt: number;
}

export type TokenResult = { ok: true; accessToken: string; fetched: boolean } | { ok: false; reason: string };

/**
 * Access tokens of destinations in this process (CONTRACT 20): kept in memory only, per webhook and version of its
 * `auth` (DestinationAuth.cacheKey), renewed before they expire, and fetched once for every attempt waiting at the
 * same time (single flight). A token a receiver refused (401) is dropped so the next attempt fetches a new one.
 */
export class DestinationTokens {
  private readonly cache = new LRUCache<string, CachedToken>({ max: TOKEN_CACHE_MAX });
  private readonly fetching = new Map<string, Promise<TokenOutcome>>();

  constructor(
    private readonly exchange: TokenExchange,
    private readonly onFetch?: (outcome: TokenFetchOutcome) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** A token for the destination: the cached one while it is fresh, else one fetch shared by every caller. */
  async token(auth: DestinationAuth): Promise<TokenResult> {
    const cached = this.cache.get(auth.cacheKey);
    const at = this.now();
    if (cached && at < cached.renewAt) return { ok: true, accessToken: cached.accessToken, fetched: false };
    const outcome = await this.fetch(auth);
    if (outcome.ok) return { ok: true, accessToken: outcome.accessToken, fetched: true };
    // A renewal that failed leaves a token that has not expired yet usable.
    const still = this.cache.get(auth.cacheKey);
    if (still && this.now() < still.expiresAt) return { ok: true, accessToken: still.accessToken, fetched: false };
    return outcome;
  }

  /** Drops the cached token of a destination if it is still `accessToken` (the receiver refused it). */
  drop(cacheKey: string, accessToken: string): void {
    if (this.cache.get(cacheKey)?.accessToken === accessToken) this.cache.delete(cacheKey);
  }

  private fetch(auth: DestinationAuth): Promise<TokenOutcome> {
    let running = this.fetching.get(auth.cacheKey);
    if (!running) {
      const started = this.now();
      running = requestToken(auth, this.exchange)
        .then((outcome) => {
          this.onFetch?.(outcome.ok ? 'success' : 'failure');
          if (outcome.ok) {
            const lifetimeMs = (outcome.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_S) * 1000;
            const renewBeforeMs = Math.min(TOKEN_RENEW_BEFORE_S * 1000, lifetimeMs / 2);
            // Lifetimes count from when the request left: the answer may have taken a while.
            this.cache.set(auth.cacheKey, {
              accessToken: outcome.accessToken,
              renewAt: started + lifetimeMs - renewBeforeMs,
              expiresAt: started + lifetimeMs,
            });
          }
          return outcome;
        })
        .finally(() => this.fetching.delete(auth.cacheKey));
      this.fetching.set(auth.cacheKey, running);
    }
    return running;
  }
}
