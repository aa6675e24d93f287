import { ORG_CPU_BUDGET_MS, ORG_CPU_WINDOW_MS, SHORT_TASK_MS } from '../tunables';

export interface FairQueueOptions {
  /** Threads of the pool (T), at least 2. */
  threads: number;
  budgetMs?: number;
  windowMs?: number;
}

/** A task handed out by `next`; give it back to `finish` when its thread is done with it. */
export interface Started<T> {
  orgId: string;
  item: T;
  startedAt: number;
}

interface Org<T> {
  waiting: T[];
  running: Set<Started<T>>;
  /** Render times of finished tasks inside the window, oldest first. */
  spent: { at: number; ms: number }[];
}

/**
 * The fair queue of a render pool: tasks wait per organisation, and `next` hands out the task of the organisation
 * with the fewest tasks running, round robin between equals, so one organisation's backlog never runs ahead of
 * another's single task. An organisation over its budget (render time in the window, running tasks included) whose
 * tasks are long (one over SHORT_TASK_MS in the window) may hold at most T−1 threads, alone too, so that another
 * organisation's task never waits behind a long one. Work-conserving otherwise: an organisation under its budget, or
 * over it with short tasks only (a fan-out of cheap templates at a high rate), gets every thread it can use.
 * Pure bookkeeping (the caller passes the time), so it is tested without threads.
 */
export class FairQueue<T> {
  private readonly orgs = new Map<string, Org<T>>();
  /** Organisations with waiting tasks, least recently served first. */
  private ring: string[] = [];
  private runningTotal = 0;
  readonly threads: number;
  private readonly budgetMs: number;
  private readonly windowMs: number;

  constructor(options: FairQueueOptions) {
    if (!Number.isSafeInteger(options.threads) || options.threads < 2)
      throw new RangeError(`a render pool needs at least 2 threads, got ${options.threads}`);
    this.threads = options.threads;
    this.budgetMs = options.budgetMs ?? ORG_CPU_BUDGET_MS;
    this.windowMs = options.windowMs ?? ORG_CPU_WINDOW_MS;
  }

  /** Adds a task at the back of its organisation's queue. */
  push(orgId: string, item: T): void {
    const org = this.org(orgId);
    org.waiting.push(item);
    if (org.waiting.length === 1) this.ring.push(orgId);
  }

  /** The next task to start now, or null when every thread is taken or no organisation may start one. */
  next(now: number): Started<T> | null {
    if (this.runningTotal >= this.threads) return null;
    let best: string | null = null;
    let bestRunning = Number.POSITIVE_INFINITY;
    for (const orgId of this.ring) {
      const org = this.orgs.get(orgId)!;
      const running = org.running.size;
      if (running >= bestRunning || running >= this.limit(orgId, now)) continue;
      best = orgId;
      bestRunning = running;
    }
    if (best === null) return null;
    const org = this.orgs.get(best)!;
    const started: Started<T> = { orgId: best, item: org.waiting.shift()!, startedAt: now };
    org.running.add(started);
    this.runningTotal += 1;
    this.ring = this.ring.filter((id) => id !== best);
    if (org.waiting.length > 0) this.ring.push(best);
    return started;
  }

  /** Records that a started task ended, counting its time against its organisation's budget. */
  finish(started: Started<T>, now: number): void {
    const org = this.orgs.get(started.orgId);
    if (!org || !org.running.delete(started)) return;
    this.runningTotal -= 1;
    org.spent.push({ at: now, ms: Math.max(0, now - started.startedAt) });
    this.forget(now);
  }

  /** Takes every waiting task out (on close). */
  drain(): T[] {
    const items: T[] = [];
    for (const org of this.orgs.values()) items.push(...org.waiting.splice(0));
    this.ring = [];
    return items;
  }

  /** An organisation's render time in the window, running tasks included. */
  spentMs(orgId: string, now: number): number {
    const org = this.orgs.get(orgId);
    if (!org) return 0;
    let ms = 0;
    for (const s of org.spent) if (s.at > now - this.windowMs) ms += s.ms;
    for (const r of org.running) ms += Math.max(0, now - r.startedAt);
    return ms;
  }

  /** Tasks running and waiting, per organisation with any (for metrics and tests). */
  load(): { running: number; waiting: Record<string, { running: number; waiting: number }> } {
    const waiting: Record<string, { running: number; waiting: number }> = {};
    for (const [orgId, org] of this.orgs)
      if (org.running.size + org.waiting.length > 0)
        waiting[orgId] = { running: org.running.size, waiting: org.waiting.length };
    return { running: this.runningTotal, waiting };
  }

  private limit(orgId: string, now: number): number {
    return this.spentMs(orgId, now) > this.budgetMs && this.longestMs(orgId, now) > SHORT_TASK_MS
      ? this.threads - 1
      : this.threads;
  }

  /** The longest of an organisation's tasks in the window, running ones included (as long as they have run). */
  private longestMs(orgId: string, now: number): number {
    const org = this.orgs.get(orgId);
    if (!org) return 0;
    let longest = 0;
    for (const s of org.spent) if (s.at > now - this.windowMs) longest = Math.max(longest, s.ms);
    for (const r of org.running) longest = Math.max(longest, now - r.startedAt);
    return longest;
  }

  private org(orgId: string): Org<T> {
    let org = this.orgs.get(orgId);
    if (!org) {
      org = { waiting: [], running: new Set(), spent: [] };
      this.orgs.set(orgId, org);
    }
    return org;
  }

  // Entries leave with the window, and an idle organisation leaves the map, so the bookkeeping stays as small
  // as the set of organisations that rendered in the last window.
  private forget(now: number): void {
    for (const [orgId, org] of this.orgs) {
      while (org.spent.length > 0 && org.spent[0]!.at <= now - this.windowMs) org.spent.shift();
      if (org.spent.length === 0 && org.running.size === 0 && org.waiting.length === 0) this.orgs.delete(orgId);
    }
  }
}
