import { LRUCache } from 'lru-cache';
import { AdaptiveLimit, answerSignal } from './adaptive-limit';
import { DeferredRegistry } from './deferred';
import { canServe, firstAnswerWindow, holdEstimate, learnHold, stayAwayMs, type EndpointPace } from './pace-estimate';
import { REMEMBERED_ENDPOINTS } from '../tunables';

/** Who a request is for: the organisation and webhook it is shared between, and the origin it goes to. */
export interface SendTarget {
  orgId: string;
  webhookId: string;
  origin: string;
}

/** What a finished request tells the scheduler (none when nothing was sent). */
export interface SendResultSignal {
  statusCode: number;
  error: string | null;
  durationMs: number;
}

/** A slot held for one request; give it back exactly once. */
export interface SendTurn {
  release(result?: SendResultSignal): void;
}

export interface SendSchedulerOptions {
  /** Requests in flight in this process at most (DELIVERY_CONCURRENCY). */
  slots: number;
  /** Ceiling of one webhook's adaptive limit (DELIVERY_ENDPOINT_CONCURRENCY). */
  endpointMax: number;
  /** Optional ceiling per origin (DELIVERY_ORIGIN_CONCURRENCY); 0: none. */
  originMax: number;
  /** The limit a webhook starts with (tests). */
  initialEndpointLimit?: number;
  /**
   * Brings back early deliveries this process turned away from a webhook that now has room (nothing waiting, fewer
   * in flight than its limit): their waiting jobs were delayed by the pace estimated while the webhook was full, and
   * without a recall a burst would end in a trickle at that estimate long after the receiver was idle again.
   */
  recall?: (deliveryIds: string[]) => void;
}

interface Waiter {
  grant: (turn: SendTurn | null) => void;
  timer: NodeJS.Timeout | undefined;
  /** When it is turned away: `asked`, or sooner while its webhook has yet to answer (UNKNOWN_HOLD_MS). */
  deadline: number;
  /** The deadline its request asked for. */
  asked: number;
}

class Endpoint {
  inFlight = 0;
  lastServed = 0;
  readonly waiters: Waiter[] = [];
  /** When each request in flight started (at most the limit of them). */
  readonly started = new Set<{ at: number }>();
  constructor(
    readonly target: SendTarget,
    readonly org: Org,
    readonly pace: EndpointPace,
  ) {}
}

class Org {
  inFlight = 0;
  waiting = 0;
  lastServed = 0;
  readonly endpoints = new Map<string, Endpoint>();
  constructor(readonly id: string) {}
}

/**
 * The worker's send slots, shared fairly (CONTRACT 15). A request waits here, in this process, for a slot; when one
 * is free it goes to the organisation with work due that has the fewest requests in flight, and within it to the
 * webhook with the fewest (round robin between equals): under contention each organisation, then each of its
 * webhooks, gets at least an equal share of the slots, and one that is alone gets all of them (work-conserving).
 * Each webhook's requests in flight are capped by its {@link AdaptiveLimit}, so a receiver that hangs ends up holding
 * one slot while a fast one climbs to DELIVERY_ENDPOINT_CONCURRENCY; an origin shared by many tenants (Slack,
 * PagerDuty) is no bottleneck unless DELIVERY_ORIGIN_CONCURRENCY sets a ceiling. A request that gets no slot by its
 * deadline is turned away (its delivery comes back later, at its webhook's pace), and one whose webhook already has
 * more waiting than it can serve before the deadline is turned away at once. Per process, no I/O.
 */
export class SendScheduler {
  private inFlight = 0;
  private sequence = 0;
  private readonly orgs = new Map<string, Org>();
  /** Webhooks with requests in flight or waiting, by id. */
  private readonly endpoints = new Map<string, Endpoint>();
  /** Organisations with at least one request waiting. */
  private readonly waitingOrgs = new Set<Org>();
  private readonly origins = new Map<string, number>();
  private readonly paces = new LRUCache<string, EndpointPace>({ max: REMEMBERED_ENDPOINTS });
  /** Deliveries turned away by a full webhook, and those recalled ({@link SendSchedulerOptions.recall}). */
  private readonly deferred = new DeferredRegistry();

  constructor(private readonly options: SendSchedulerOptions) {}

  /** Requests in flight in this process. */
  get active(): number {
    return this.inFlight;
  }

  /** Requests waiting for a slot in this process. */
  get waiting(): number {
    let waiting = 0;
    for (const org of this.waitingOrgs) waiting += org.waiting;
    return waiting;
  }

  /** A webhook's current limit in this process (its starting limit when it has not sent yet). */
  limitOf(webhookId: string): number {
    return this.paceOf(webhookId).limit.current;
  }

  /** Requests of a webhook in flight in this process. */
  inFlightOf(webhookId: string): number {
    return this.endpoints.get(webhookId)?.inFlight ?? 0;
  }

  /**
   * Waits for a slot for a request to `target` until `deadline` (epoch ms): a turn to give back once the request has
   * ended, or null when the deadline came first, or at once when the webhook's pace says the requests already
   * waiting for it will not all have had their turn by then.
   */
  acquire(target: SendTarget, deadline: number): Promise<SendTurn | null> {
    const endpoint = this.endpoint(target);
    if (endpoint.waiters.length === 0 && this.inFlight < this.options.slots && this.eligible(endpoint)) {
      return Promise.resolve(this.grant(endpoint));
    }
    const now = Date.now();
    const left = deadline - now;
    // Beyond the line its pace can serve, a request waits only while its webhook has yet to give a first answer.
    const until =
      left > 0 && !canServe(endpoint, endpoint.waiters.length + 1, left, now, this.options.slots)
        ? firstAnswerWindow(endpoint, now)
        : deadline;
    if (left <= 0 || until === undefined) {
      this.turnAwayUnservable(endpoint, now);
      this.forgetIfIdle(endpoint);
      return Promise.resolve(null);
    }
    return new Promise((resolve) => {
      const waiter: Waiter = { grant: resolve, deadline: Math.min(deadline, until), asked: deadline, timer: undefined };
      this.arm(endpoint, waiter, now);
      endpoint.waiters.push(waiter);
      endpoint.org.waiting += 1;
      this.waitingOrgs.add(endpoint.org);
    });
  }

  /** Whether a webhook can take no more requests now (its limit, or its origin's ceiling). */
  isFull(webhookId: string): boolean {
    const endpoint = this.endpoints.get(webhookId);
    return endpoint !== undefined && !this.eligible(endpoint);
  }

  /** Remembers that a delivery waits for its webhook (bounded: past the cap the memory starts over). */
  noteWaiting(deliveryId: string, webhookId: string): void {
    this.deferred.note(deliveryId, webhookId);
  }

  /** Whether a delivery was recalled (SendSchedulerOptions.recall) and has not come back yet. */
  isRecalled(deliveryId: string): boolean {
    return this.deferred.isRecalled(deliveryId);
  }

  /** The webhook a delivery is known to wait for, if it was turned away before. */
  waitingFor(deliveryId: string): string | undefined {
    return this.deferred.webhookOf(deliveryId);
  }

  /** Forgets a delivery's wait once it gets a turn (or anything else happens to it). */
  doneWaiting(deliveryId: string): void {
    this.deferred.forget(deliveryId);
  }

  /**
   * Recalls (SendSchedulerOptions.recall), oldest first, as many deliveries turned away from `endpoint` as it has
   * room for now, counting those already on their way back, when nothing waits for it in this process.
   */
  private recallInto(endpoint: Endpoint, now = Date.now()): void {
    const { recall } = this.options;
    if (!recall || endpoint.waiters.length > 0) return;
    const room = Math.min(endpoint.pace.limit.current - endpoint.inFlight, this.options.slots - this.inFlight);
    const ids = this.deferred.recall(endpoint.target.webhookId, room, now);
    if (ids.length > 0) recall(ids);
  }

  /**
   * When a delivery turned away by `webhookId` should look again: once the deliveries ahead of it can have had their
   * turns at the webhook's pace (its average time per request over its limit), within [MIN_TURN_AWAY_MS,
   * MAX_TURN_AWAY_MS], spread so that waiters turned away together do not come back together.
   */
  retryAt(webhookId: string, now = Date.now()): Date {
    const pace = this.paceOf(webhookId);
    const endpoint = this.endpoints.get(webhookId);
    const ahead = this.deferred.count(webhookId) + (endpoint?.waiters.length ?? 0);
    const hold = endpoint ? holdEstimate(endpoint, now) : (pace.holdMs ?? 0);
    return new Date(now + stayAwayMs(ahead, pace.limit.current, hold));
  }

  /** Turns `waiter` away at its deadline unless it gets its turn first. */
  private arm(endpoint: Endpoint, waiter: Waiter, now: number): void {
    waiter.timer = setTimeout(() => {
      endpoint.waiters.splice(endpoint.waiters.indexOf(waiter), 1);
      this.noteDequeued(endpoint);
      waiter.grant(null);
    }, waiter.deadline - now);
  }

  /**
   * A webhook has given its first answer: the waiters that waited for it get back the deadlines they asked for, and
   * those its pace, now known, cannot serve before them are turned away.
   */
  private judgeByPace(endpoint: Endpoint, now: number): void {
    for (const waiter of endpoint.waiters) {
      if (waiter.deadline >= waiter.asked) continue;
      clearTimeout(waiter.timer);
      waiter.deadline = waiter.asked;
      this.arm(endpoint, waiter, now);
    }
    this.turnAwayUnservable(endpoint, now);
  }

  /**
   * Turns away, newest first, the waiters the endpoint can no longer serve before their deadlines (its requests in
   * flight have held their slots longer than expected): their places in the room are given back now, not at their
   * deadlines, and they come back at the endpoint's pace.
   */
  private turnAwayUnservable(endpoint: Endpoint, now: number): void {
    while (endpoint.waiters.length > 0) {
      const last = endpoint.waiters[endpoint.waiters.length - 1]!;
      if (canServe(endpoint, endpoint.waiters.length, last.deadline - now, now, this.options.slots)) return;
      endpoint.waiters.pop();
      clearTimeout(last.timer);
      this.noteDequeued(endpoint);
      last.grant(null);
    }
  }

  private paceOf(webhookId: string): EndpointPace {
    let pace = this.paces.get(webhookId);
    if (!pace) {
      pace = {
        limit: new AdaptiveLimit(this.options.endpointMax, this.options.initialEndpointLimit),
        holdMs: undefined,
      };
      this.paces.set(webhookId, pace);
    }
    return pace;
  }

  private endpoint(target: SendTarget): Endpoint {
    let org = this.orgs.get(target.orgId);
    if (!org) {
      org = new Org(target.orgId);
      this.orgs.set(target.orgId, org);
    }
    let endpoint = org.endpoints.get(target.webhookId);
    if (!endpoint) {
      endpoint = new Endpoint(target, org, this.paceOf(target.webhookId));
      org.endpoints.set(target.webhookId, endpoint);
      this.endpoints.set(target.webhookId, endpoint);
    }
    return endpoint;
  }

  private eligible(endpoint: Endpoint): boolean {
    if (endpoint.inFlight >= endpoint.pace.limit.current) return false;
    const { originMax } = this.options;
    return originMax <= 0 || (this.origins.get(endpoint.target.origin) ?? 0) < originMax;
  }

  private grant(endpoint: Endpoint): SendTurn {
    const { org } = endpoint;
    const origin = endpoint.target.origin;
    this.inFlight += 1;
    org.inFlight += 1;
    endpoint.inFlight += 1;
    if (this.options.originMax > 0) this.origins.set(origin, (this.origins.get(origin) ?? 0) + 1);
    this.sequence += 1;
    org.lastServed = this.sequence;
    endpoint.lastServed = this.sequence;
    const started = { at: Date.now() };
    const startedAt = started.at;
    endpoint.started.add(started);
    let released = false;
    return {
      release: (result) => {
        if (released) return;
        released = true;
        endpoint.started.delete(started);
        this.inFlight -= 1;
        org.inFlight -= 1;
        endpoint.inFlight -= 1;
        if (this.options.originMax > 0) {
          const left = (this.origins.get(origin) ?? 1) - 1;
          if (left > 0) this.origins.set(origin, left);
          else this.origins.delete(origin);
        }
        const { pace } = endpoint;
        const firstAnswer = result !== undefined && pace.holdMs === undefined;
        if (result) {
          learnHold(pace, Date.now() - startedAt);
          pace.limit.update(answerSignal(result), endpoint.inFlight + 1);
        }
        this.pump();
        if (firstAnswer) this.judgeByPace(endpoint, Date.now());
        // Only a request that was sent and ended says the webhook has room (a slot handed back unused says nothing).
        if (result) this.recallInto(endpoint);
        this.forgetIfIdle(endpoint);
      },
    };
  }

  /** Hands free slots to waiting requests: fewest in flight first, by organisation, then by webhook. */
  private pump(): void {
    while (this.inFlight < this.options.slots && this.waitingOrgs.size > 0) {
      let chosen: Endpoint | undefined;
      for (const org of this.waitingOrgs) {
        if (
          chosen &&
          (org.inFlight > chosen.org.inFlight ||
            (org.inFlight === chosen.org.inFlight && org.lastServed > chosen.org.lastServed))
        )
          continue;
        const endpoint = this.nextOf(org);
        if (endpoint) chosen = endpoint;
      }
      if (!chosen) return;
      const waiter = chosen.waiters.shift()!;
      clearTimeout(waiter.timer);
      this.noteDequeued(chosen);
      waiter.grant(this.grant(chosen));
    }
  }

  /** The webhook of `org` whose waiting request goes next: eligible, fewest in flight, longest unserved. */
  private nextOf(org: Org): Endpoint | undefined {
    let chosen: Endpoint | undefined;
    for (const endpoint of org.endpoints.values()) {
      if (endpoint.waiters.length === 0 || !this.eligible(endpoint)) continue;
      if (
        !chosen ||
        endpoint.inFlight < chosen.inFlight ||
        (endpoint.inFlight === chosen.inFlight && endpoint.lastServed < chosen.lastServed)
      )
        chosen = endpoint;
    }
    return chosen;
  }

  private noteDequeued(endpoint: Endpoint): void {
    const { org } = endpoint;
    org.waiting -= 1;
    if (org.waiting === 0) this.waitingOrgs.delete(org);
    this.forgetIfIdle(endpoint);
  }

  /** Drops the bookkeeping of an endpoint (and organisation) with nothing in flight or waiting; its pace stays remembered. */
  private forgetIfIdle(endpoint: Endpoint): void {
    if (endpoint.inFlight > 0 || endpoint.waiters.length > 0) return;
    const { org } = endpoint;
    if (org.endpoints.get(endpoint.target.webhookId) === endpoint) org.endpoints.delete(endpoint.target.webhookId);
    if (this.endpoints.get(endpoint.target.webhookId) === endpoint) this.endpoints.delete(endpoint.target.webhookId);
    if (org.endpoints.size === 0 && org.inFlight === 0 && org.waiting === 0 && this.orgs.get(org.id) === org)
      this.orgs.delete(org.id);
  }
}
