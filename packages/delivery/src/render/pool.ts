import { join } from 'node:path';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import type { AuditEventData } from './envelope';
import { REQUEST_RENDER_BUDGET_MS } from './payload-template';
import type { PreviewOutcome, PreviewRender } from './preview';
import type { TestBody } from './test-body';
import { FairPool } from './fair-pool';
import { emptyPlan, mergePlan, type DeliveryPlan, type PlanInput, type PlanProgress, type PlanSlice } from './plan';
import type { PlanTask, PreviewTask, RenderThreadData, RequestViewTask, TestTask } from './thread';
import type { RequestView } from '../request-view';
import { RENDER_HARD_DEADLINE_MS, RENDER_SLICE_MS } from '../tunables';

const THREAD_ENTRY = join(__dirname, 'thread-entry.cjs');

/** The queue warm() uses: never an organisation id (those are UUIDs). */
const WARM_UP_ORG = 'warm-up';

export interface RenderPoolOptions {
  /** GATEHOOK_ENCRYPTION_KEY, handed to each thread at start. */
  encryptionKey: string;
  threads: number;
  sliceMs?: number;
  hardDeadlineMs?: number;
  budgetMs?: number;
  windowMs?: number;
  /** A thread that failed outside any task (FairPoolOptions.onError). */
  onError?: (error: Error) => void;
}

/**
 * The render pool (CONTRACT 15): rendering templates, evaluating conditions, packing and sealing bodies run in
 * worker threads, never on the event loop that sends requests or answers the API, shared fairly between
 * organisations (FairPool). The worker plans fan-outs, batch flushes and replays here; the API renders previews
 * and test sends, and redacts the operator's request views.
 */
export class RenderPool {
  private readonly pool: FairPool;
  private readonly sliceMs: number;

  constructor(options: RenderPoolOptions) {
    const workerData: RenderThreadData = { encryptionKey: options.encryptionKey };
    this.sliceMs = options.sliceMs ?? RENDER_SLICE_MS;
    this.pool = new FairPool({
      filename: THREAD_ENTRY,
      threads: options.threads,
      workerData,
      hardDeadlineMs: options.hardDeadlineMs ?? RENDER_HARD_DEADLINE_MS,
      ...(options.onError ? { onError: options.onError } : {}),
      ...(options.budgetMs === undefined ? {} : { budgetMs: options.budgetMs }),
      ...(options.windowMs === undefined ? {} : { windowMs: options.windowMs }),
    });
  }

  get threads(): number {
    return this.pool.threads;
  }

  /**
   * Resolves once every thread has loaded its code (a thread compiles the package's TypeScript as it starts, which
   * takes a second or more): a process awaits it before taking work, so that its first renders do not wait for it.
   */
  async warm(): Promise<void> {
    // Loading a thread's code is no render: no hard deadline here, however loaded the machine.
    await Promise.all(
      Array.from({ length: this.threads }, () => this.pool.run(WARM_UP_ORG, 'ping', null, { deadline: false })),
    );
  }

  /** Plans deliveries (plan.ts) slice by slice; each slice waits for its organisation's turn again. */
  async plan(orgId: string, input: PlanInput): Promise<DeliveryPlan> {
    const plan = emptyPlan();
    let progress: PlanProgress | null = null;
    do {
      const task: PlanTask = { input, progress, sliceMs: this.sliceMs };
      const slice: PlanSlice = await this.pool.run<PlanSlice>(orgId, 'plan', task);
      mergePlan(plan, slice.plan);
      progress = slice.progress;
    } while (progress !== null);
    return plan;
  }

  /** A preview's bodies, every render of the request within REQUEST_RENDER_BUDGET_MS (preview.ts). */
  preview(orgId: string, input: PreviewRender): Promise<PreviewOutcome> {
    const task: PreviewTask = { input, budgetMs: REQUEST_RENDER_BUDGET_MS };
    return this.pool.run<PreviewOutcome>(orgId, 'preview', task);
  }

  /** A test send's body, within REQUEST_RENDER_BUDGET_MS (test-send.ts). */
  testBody(webhook: StoredWebhook, event: AuditEventData): Promise<TestBody> {
    const task: TestTask = { webhook, event, budgetMs: REQUEST_RENDER_BUDGET_MS };
    return this.pool.run<TestBody>(webhook.orgId, 'testBody', task);
  }

  /**
   * A delivery's request as sent, its secret values redacted within REDACTION_BUDGET_MS (request-view.ts): the
   * body is decrypted, signed and searched on a thread, in the organisation's turn.
   */
  requestView(orgId: string, task: RequestViewTask): Promise<RequestView> {
    return this.pool.run<RequestView>(orgId, 'requestView', task);
  }

  /** Tasks running and waiting, per organisation. */
  load(): ReturnType<FairPool['load']> {
    return this.pool.load();
  }

  /** Stops the threads; waiting tasks fail. Safe to call twice. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
