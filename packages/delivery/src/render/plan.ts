import type { SecretBox } from '@gatehook/core/encryption';
import { batches, subscribes, type StoredWebhook } from '@gatehook/core/webhook-config';
import type { RenderedEvent } from './bodies';
import { failedDelivery, packDeliveries, type PreparedDelivery } from './prepare';
import { deliveryError } from '../state/delivery-error';
import type { AuditEventData } from './envelope';
import type { LiveWebhook, VersionedWebhook } from '../webhook-configs';

/** One event to plan, with the instant it was received (fan-out delivers only what came after activeSince). */
export interface PlanEvent {
  data: AuditEventData;
  receivedAt: Date;
}

/**
 * Which events a webhook gets:
 * - `live` (fan-out): subscribed, received after the webhook became active, and matching its condition;
 * - `replay`: subscribed and matching, whenever received;
 * - `all` (batch flush): every event, already chosen when it entered the buffer.
 */
export type PlanFilter = 'live' | 'replay' | 'all';

/** What a plan works on: only plain data, so that it crosses to a render thread by structured clone. */
export interface PlanInput {
  /**
   * Stored rows, secrets still encrypted: each thread decrypts and compiles its own copy, once per version (a row
   * that carries its version key is not hashed again).
   */
  webhooks: VersionedWebhook[];
  events: PlanEvent[];
  now: Date;
  filter: PlanFilter;
  /**
   * Fan-out: a batching webhook's full batches become deliveries and the rest goes to its batch buffer. Otherwise
   * (batch flush, replay) every event goes into a body.
   */
  buffer: boolean;
}

/** What a plan produced; every part is plain data. */
export interface DeliveryPlan {
  /** Bodies in clear and sealed for storage (stored-body.ts), and the failed deliveries of events that did not render. */
  deliveries: PreparedDelivery[];
  /** Events that wait in a batch buffer. */
  batchItems: { webhookId: string; eventId: string }[];
  /** Per webhook whose rest went to its buffer: how many events, and its max_events. */
  batched: [webhookId: string, added: { count: number; maxEvents: number }][];
  /** Webhooks every one of whose events failed to render: to be disabled with reason template_error. */
  broken: string[];
}

/**
 * Where a plan stopped at the end of a slice: the webhook it was on, its stage (matching events, then rendering the
 * matched ones) and what that webhook gathered so far. Plain data: the next slice may run on another thread.
 */
export interface PlanProgress {
  webhook: number;
  stage: 'match' | 'render';
  /** Next index into `events` (match) or into `chosen` (render). */
  next: number;
  /** Indices into `events` of the events chosen for this webhook (growing while matching). */
  chosen: number[];
  rendered: RenderedEvent[];
  renderFailures: number;
}

export interface PlanSlice {
  plan: DeliveryPlan;
  /** Null when the plan is complete. */
  progress: PlanProgress | null;
}

export interface PlanDeps {
  box: SecretBox;
  /** The compiled, decrypted webhook of a stored row (a thread caches them). */
  live(stored: VersionedWebhook): LiveWebhook;
  /** The slice ends at the first check past this instant (ms since the epoch); it always does one unit of work. */
  until: number;
  clock?: () => number;
}

/** An empty plan, to merge slices into. */
export function emptyPlan(): DeliveryPlan {
  return { deliveries: [], batchItems: [], batched: [], broken: [] };
}

/** Adds a slice's plan to `into`. */
export function mergePlan(into: DeliveryPlan, part: DeliveryPlan): DeliveryPlan {
  into.deliveries.push(...part.deliveries);
  into.batchItems.push(...part.batchItems);
  into.batched.push(...part.batched);
  into.broken.push(...part.broken);
  return into;
}

function chosen(webhook: LiveWebhook, event: PlanEvent, filter: PlanFilter): boolean {
  if (filter === 'all') return true;
  if (!subscribes(webhook, event.data.action)) return false;
  if (filter === 'live' && event.receivedAt <= webhook.activeSince) return false;
  return webhook.matches(event.data);
}

/**
 * The webhooks that may get any of `events` under `filter`, judged by what a plan checks before the condition (the
 * subscription, and for `live` the instant each became active): those a plan must be handed. The rest would choose
 * nothing, so a fan-out of a large organisation carries to the render pool only the webhooks that subscribe to what
 * happened, and one whose events no webhook subscribes to needs no render task at all.
 */
export function mayChoose<W extends Pick<StoredWebhook, 'events' | 'activeSince'>>(
  webhooks: readonly W[],
  events: readonly PlanEvent[],
  filter: PlanFilter,
): W[] {
  if (filter === 'all') return [...webhooks];
  const actions = [...new Set(events.map((event) => event.data.action))];
  let latest = Number.NEGATIVE_INFINITY;
  for (const event of events) latest = Math.max(latest, event.receivedAt.getTime());
  return webhooks.filter(
    (webhook) =>
      actions.some((action) => subscribes(webhook, action)) &&
      (filter !== 'live' || latest > webhook.activeSince.getTime()),
  );
}

/**
 * Plans the deliveries of `input.events` for `input.webhooks`, from `progress` (null: from the start) until
 * `deps.until`: for each webhook, chooses its events (subscription, activeSince, condition), splits a batching
 * webhook's full batches from the rest when `buffer` is set, renders each chosen event (template or envelope),
 * and packs and seals the bodies (packDeliveries). An event that does not render becomes its own failed delivery.
 *
 * Cut into slices so that the render pool can share its threads fairly: a slice stops between two units of
 * work (one event matched or rendered) once the time is past `until`, and returns what it finished with where it
 * stopped. Pure apart from the clock: the same function runs in the render threads and in unit tests.
 */
export function planSlice(input: PlanInput, progress: PlanProgress | null, deps: PlanDeps): PlanSlice {
  const clock = deps.clock ?? Date.now;
  const plan = emptyPlan();
  const envelopes = new Map<string, string>();
  let p: PlanProgress = progress ?? fresh(0);
  let worked = false;
  const stop = (): boolean => worked && clock() >= deps.until;

  while (p.webhook < input.webhooks.length) {
    const webhook = deps.live(input.webhooks[p.webhook]!);
    if (p.stage === 'match') {
      while (p.next < input.events.length) {
        if (stop()) return { plan, progress: p };
        if (chosen(webhook, input.events[p.next]!, input.filter)) p.chosen.push(p.next);
        p.next += 1;
        worked = true;
      }
      if (input.buffer && batches(webhook)) {
        // Full batches go out from here; only the rest waits in the buffer for more events or the linger.
        const whole = p.chosen.length - (p.chosen.length % webhook.maxEvents);
        const rest = p.chosen.slice(whole);
        for (const index of rest)
          plan.batchItems.push({ webhookId: webhook.id, eventId: input.events[index]!.data.id });
        plan.batched.push([webhook.id, { count: rest.length, maxEvents: webhook.maxEvents }]);
        p.chosen = p.chosen.slice(0, whole);
      }
      p = { ...p, stage: 'render', next: 0 };
    }
    while (p.next < p.chosen.length) {
      if (stop()) return { plan, progress: p };
      const event = input.events[p.chosen[p.next]!]!.data;
      const result = webhook.render(event, envelopes);
      if (result.ok) p.rendered.push({ eventId: event.id, json: result.json });
      else {
        p.renderFailures += 1;
        plan.deliveries.push(failedDelivery(webhook.id, event.id, deliveryError('template_error', result.error)));
      }
      p.next += 1;
      worked = true;
    }
    plan.deliveries.push(...packDeliveries(webhook, p.rendered, deps.box, input.now));
    if (p.chosen.length > 0 && p.renderFailures === p.chosen.length) plan.broken.push(webhook.id);
    p = fresh(p.webhook + 1);
  }
  return { plan, progress: null };
}

function fresh(webhook: number): PlanProgress {
  return { webhook, stage: 'match', next: 0, chosen: [], rendered: [], renderFailures: 0 };
}

/** The whole plan in one call (no slicing): for callers without a render pool and for tests. */
export function planDeliveries(input: PlanInput, deps: Omit<PlanDeps, 'until'>): DeliveryPlan {
  const plan = emptyPlan();
  let progress: PlanProgress | null = null;
  do {
    const slice = planSlice(input, progress, { ...deps, until: Number.POSITIVE_INFINITY });
    mergePlan(plan, slice.plan);
    progress = slice.progress;
  } while (progress !== null);
  return plan;
}
