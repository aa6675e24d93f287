import type { SecretBox } from '@gatehook/core/encryption';
import { USER_AGENT } from '@gatehook/core/version';
import type { Db } from '@gatehook/db/client';
import type { SendResult } from '@gatehook/egress/client';
import type { DeliveryQueues } from './jobs';
import { decideNextState, type DeliveryStatus } from './outcome';
import { deliveryHeaders } from './signing';
import { disableWebhookAutomatically } from './webhook-state';

/** Sends one signed request; the egress client in production. */
export type Sender = (request: { url: string; headers: Record<string, string>; body: string }) => Promise<SendResult>;

/** Caps requests in flight per origin, so one slow endpoint cannot take every worker slot. Per process. */
export class OriginLimiter {
  private readonly inFlight = new Map<string, number>();
  /** Deliveries turned away by a full origin, with that origin: their next turn can be refused without I/O. */
  private readonly waiting = new Map<string, string>();
  constructor(
    private readonly cap: number,
    private readonly maxWaiting = 100_000,
  ) {}

  /** Whether an origin has no free slot now. */
  isFull(origin: string): boolean {
    return (this.inFlight.get(origin) ?? 0) >= this.cap;
  }

  /** Remembers that a delivery waits for its origin (bounded: past the cap the memory starts over). */
  noteWaiting(deliveryId: string, origin: string): void {
    if (this.waiting.size >= this.maxWaiting) this.waiting.clear();
    this.waiting.set(deliveryId, origin);
  }

  /** The origin a delivery is known to wait for, if it was turned away before. */
  waitingFor(deliveryId: string): string | undefined {
    return this.waiting.get(deliveryId);
  }

  /** Forgets a delivery's wait once it gets a turn (or anything else happens to it). */
  doneWaiting(deliveryId: string): void {
    this.waiting.delete(deliveryId);
  }

  tryAcquire(origin: string): boolean {
    const current = this.inFlight.get(origin) ?? 0;
    if (current >= this.cap) return false;
    this.inFlight.set(origin, current + 1);
    return true;
  }

  release(origin: string): void {
    const current = (this.inFlight.get(origin) ?? 1) - 1;
    if (current <= 0) this.inFlight.delete(origin);
    else this.inFlight.set(origin, current);
  }
}

export interface AttemptDeps {
  db: Db;
  box: SecretBox;
  queues: DeliveryQueues;
  send: Sender;
  limiter: OriginLimiter;
  retrySchedule: readonly number[];
  retryAfterCapSeconds: number;
  circuitBreakerSeconds: number;
  /** The per-attempt timeout; the lease outlasts it so a delivery is never in flight twice. */
  timeoutMs: number;
  onAttempt?: (info: { durationMs: number; statusCode: number; error: string | null }) => void;
  onFinished?: (status: 'succeeded' | 'failed') => void;
}

export type AttemptOutcome =
  | { kind: 'sent'; status: DeliveryStatus; nextRetryAt: Date | null }
  | { kind: 'skipped'; reason: 'not_found' | 'not_due' | 'leased' | 'finished' }
  | { kind: 'cancelled'; reason: string }
  /** The origin is at its cap: try again shortly, without having consumed anything. */
  | { kind: 'origin_busy'; retryAt: Date };

/** When a delivery turned away by a full origin tries again: soon, spread so the waiters do not return at once. */
function originRetryAt(): Date {
  return new Date(Date.now() + 250 + Math.floor(Math.random() * 250));
}

// Time after the request's timeout to record its outcome; a lease past this means the worker died mid-attempt.
const LEASE_MARGIN_MS = 5_000;

/**
 * Makes the next attempt of a delivery (SPEC 3.1, 6.6; CONTRACT 5). A lease in Postgres makes the attempt
 * exclusive whatever the queue does (a duplicated job, a stalled job re-run, a reconciler pass); the attempt,
 * the delivery's next state and the webhook's failure streak are written in one transaction.
 */
export async function attemptDelivery(deps: AttemptDeps, deliveryId: string): Promise<AttemptOutcome> {
  // A delivery already turned away by its origin, whose origin is still full, waits again without touching the
  // database: a dead endpoint's backlog must not cost the healthy ones a lease, a read and a release every bounce.
  const waitingFor = deps.limiter.waitingFor(deliveryId);
  if (waitingFor !== undefined && deps.limiter.isFull(waitingFor)) return { kind: 'origin_busy', retryAt: originRetryAt() };
  deps.limiter.doneWaiting(deliveryId);
  const now = new Date();
  const leaseUntil = new Date(now.getTime() + deps.timeoutMs + LEASE_MARGIN_MS);
  const claimed = await deps.db.delivery.updateManyAndReturn({
    where: {
      id: deliveryId,
      status: { in: ['pending', 'retrying'] },
      nextRetryAt: { lte: now },
      OR: [{ leasedUntil: null }, { leasedUntil: { lt: now } }],
    },
    data: { leasedUntil: leaseUntil },
  });
  const delivery = claimed[0];
  if (!delivery) {
    const row = await deps.db.delivery.findUnique({ where: { id: deliveryId }, select: { status: true, nextRetryAt: true, leasedUntil: true } });
    if (!row) return { kind: 'skipped', reason: 'not_found' };
    if (row.status === 'succeeded' || row.status === 'failed') return { kind: 'skipped', reason: 'finished' };
    if (row.leasedUntil && row.leasedUntil >= now) return { kind: 'skipped', reason: 'leased' };
    return { kind: 'skipped', reason: 'not_due' };
  }

  const release = async (data: { status?: 'failed'; error?: string } = {}) => {
    await deps.db.delivery.updateMany({ where: { id: deliveryId, leasedUntil: leaseUntil }, data: { ...data, leasedUntil: null, ...(data.status ? { nextRetryAt: null } : {}) } });
  };

  const webhook = await deps.db.webhook.findUnique({ where: { id: delivery.webhookId } });
  if (!webhook || webhook.status !== 'active' || delivery.bodyEncrypted === null) {
    const error = !webhook ? 'webhook_deleted' : webhook.status === 'paused' ? 'webhook_paused' : webhook.status === 'disabled' ? 'webhook_disabled' : 'no_body';
    await release({ status: 'failed', error });
    deps.onFinished?.('failed');
    return { kind: 'cancelled', reason: error };
  }

  // Everything that reads secrets happens before the request: a value that cannot be decrypted (a key removed from
  // GATEHOOK_ENCRYPTION_KEY) fails this delivery with a clear error instead of retrying it forever.
  const startedAt = new Date();
  let prepared: { url: string; origin: string; body: string; headers: Record<string, string> };
  try {
    const url = deps.box.decrypt(webhook.urlEncrypted);
    const body = deps.box.decrypt(delivery.bodyEncrypted);
    const secrets = [deps.box.decrypt(webhook.secretEncrypted)];
    if (webhook.previousSecretEncrypted && webhook.previousSecretValidUntil && webhook.previousSecretValidUntil > startedAt) {
      secrets.push(deps.box.decrypt(webhook.previousSecretEncrypted));
    }
    const headers = deliveryHeaders({
      deliveryId,
      timestampSeconds: Math.floor(startedAt.getTime() / 1000),
      body,
      secrets,
      contentType: delivery.contentType ?? 'application/json',
      userAgent: USER_AGENT,
      custom: webhook.headersEncrypted ? deps.box.decryptMap(webhook.headersEncrypted) : {},
    });
    prepared = { url, origin: new URL(url).origin, body, headers };
  } catch {
    await release({ status: 'failed', error: 'secret_unreadable: a stored secret of this webhook cannot be decrypted with the configured keys' });
    deps.onFinished?.('failed');
    return { kind: 'cancelled', reason: 'secret_unreadable' };
  }

  if (!deps.limiter.tryAcquire(prepared.origin)) {
    await release();
    deps.limiter.noteWaiting(deliveryId, prepared.origin);
    return { kind: 'origin_busy', retryAt: originRetryAt() };
  }
  let result: SendResult;
  try {
    result = await deps.send({ url: prepared.url, headers: prepared.headers, body: prepared.body });
  } catch {
    // The sender reports failures as results; an exception is a bug there, recorded as a network error.
    result = { statusCode: 0, error: 'network_error', durationMs: Date.now() - startedAt.getTime(), responseSnippet: '', retryAfter: null };
  } finally {
    deps.limiter.release(prepared.origin);
  }
  deps.onAttempt?.({ durationMs: result.durationMs, statusCode: result.statusCode, error: result.error });

  const finishedAt = new Date();
  const next = decideNextState(
    { status: delivery.status, cycleAttempts: delivery.cycleAttempts },
    { statusCode: result.statusCode, error: result.error, retryAfter: result.retryAfter },
    { now: finishedAt, schedule: deps.retrySchedule, retryAfterCapSeconds: deps.retryAfterCapSeconds },
  );

  let disabled: { orgId: string; auditEventId: string } | null = null;
  let applied = false;
  await deps.db.$transaction(async (tx) => {
    await tx.deliveryAttempt.create({
      data: {
        deliveryId,
        at: startedAt,
        statusCode: result.statusCode,
        error: result.error ?? '',
        durationMs: Math.round(result.durationMs),
        responseSnippet: result.responseSnippet,
      },
    });
    // Only the lease holder moves the delivery on; a pause or disable that cancelled it meanwhile wins.
    const updated = await tx.delivery.updateMany({
      where: { id: deliveryId, leasedUntil: leaseUntil, status: { in: ['pending', 'retrying'] } },
      data: {
        status: next.status,
        cycleAttempts: next.cycleAttempts,
        attemptCount: { increment: 1 },
        nextRetryAt: next.nextRetryAt,
        leasedUntil: null,
        ...(next.error ? { error: next.error } : {}),
      },
    });
    applied = updated.count > 0;
    if (!applied) {
      await tx.delivery.updateMany({ where: { id: deliveryId }, data: { attemptCount: { increment: 1 } } });
    }

    if (next.webhookEffect === 'success') {
      await tx.webhook.updateMany({ where: { id: webhook.id, failingSince: { not: null } }, data: { failingSince: null } });
    } else if (next.webhookEffect === 'failure') {
      await tx.webhook.updateMany({ where: { id: webhook.id, failingSince: null }, data: { failingSince: finishedAt } });
      const current = await tx.webhook.findUnique({ where: { id: webhook.id }, select: { failingSince: true, status: true } });
      if (
        current?.status === 'active' &&
        current.failingSince &&
        finishedAt.getTime() - current.failingSince.getTime() >= deps.circuitBreakerSeconds * 1000
      ) {
        disabled = await disableWebhookAutomatically(tx, webhook.id, 'circuit_breaker');
      }
    } else if (next.webhookEffect === 'gone') {
      disabled = await disableWebhookAutomatically(tx, webhook.id, 'gone');
    }
  });

  if (applied && next.nextRetryAt) await deps.queues.deliver(deliveryId, next.nextRetryAt);
  const disabledEvent = disabled as { orgId: string; auditEventId: string } | null;
  if (disabledEvent) await deps.queues.fanout(disabledEvent.orgId, [disabledEvent.auditEventId]);
  if (applied && (next.status === 'succeeded' || next.status === 'failed')) deps.onFinished?.(next.status);
  return { kind: 'sent', status: applied ? next.status : 'failed', nextRetryAt: applied ? next.nextRetryAt : null };
}
