import type { StreakChange } from '@gatehook/db/delivery/record';
import type { WebhookEffect } from './outcome';

/** One attempt's effect on its webhook, at the instant the attempt finished. */
export interface AttemptEffect {
  webhookId: string;
  effect: WebhookEffect;
  at: Date;
}

/**
 * Folds the effects of a batch of attempts, in the order they finished, into each webhook's failure-streak change
 * (CONTRACT 5): any 2xx ends the streak; the first failure after it (or in the batch) starts one; 429 and 410
 * leave it alone. Webhooks whose streak does not change are left out.
 */
export function streakChanges(effects: readonly AttemptEffect[]): StreakChange[] {
  const byWebhook = new Map<string, StreakChange>();
  for (const { webhookId, effect, at } of [...effects].sort((a, b) => a.at.getTime() - b.at.getTime())) {
    if (effect !== 'success' && effect !== 'failure') continue;
    const change = byWebhook.get(webhookId) ?? { webhookId, cleared: false, failingFrom: null };
    if (effect === 'success') {
      change.cleared = true;
      change.failingFrom = null;
    } else change.failingFrom ??= at;
    byWebhook.set(webhookId, change);
  }
  return [...byWebhook.values()];
}

/**
 * The webhooks whose failure streak has now lasted CIRCUIT_BREAKER_SECONDS: a streak still running after the
 * batch, started at its stored start (`before`, as it was before the batch) or else in this batch.
 */
export function trippedBreakers(
  changes: readonly StreakChange[],
  before: ReadonlyMap<string, Date | null>,
  now: Date,
  breakerSeconds: number,
): string[] {
  const tripped: string[] = [];
  for (const change of changes) {
    if (change.failingFrom === null) continue;
    const start = change.cleared ? change.failingFrom : (before.get(change.webhookId) ?? change.failingFrom);
    if (now.getTime() - start.getTime() >= breakerSeconds * 1000) tripped.push(change.webhookId);
  }
  return tripped;
}
