import { workerData } from 'piscina';
import { SecretBox } from '@gatehook/core/encryption';
import type { StoredWebhook } from '@gatehook/core/webhook-config';
import type { AuditEventData } from './envelope';
import { renderPreview, type PreviewOutcome, type PreviewRender } from './preview';
import { renderTestBody, type TestBody } from './test-body';
import { LiveWebhooks, type VersionedWebhook } from '../webhook-configs';
import { RequestViews, type RequestView, type SentDelivery, type WebhookSecrets } from '../request-view';
import { planSlice, type PlanInput, type PlanProgress, type PlanSlice } from './plan';

/** What the pool hands a thread at start (piscina's workerData). */
export interface RenderThreadData {
  /** GATEHOOK_ENCRYPTION_KEY: bodies are sealed and webhook secrets opened here, so no clear secret crosses threads. */
  encryptionKey: string;
}

export interface PlanTask {
  input: PlanInput;
  progress: PlanProgress | null;
  sliceMs: number;
}

export interface PreviewTask {
  input: PreviewRender;
  budgetMs: number;
}

export interface RequestViewTask {
  webhook: WebhookSecrets;
  delivery: SentDelivery;
  rotationOverlapSeconds: number;
}

export interface TestTask {
  webhook: StoredWebhook;
  event: AuditEventData;
  budgetMs: number;
}

const box = new SecretBox((workerData as RenderThreadData).encryptionKey);
const webhooks = new LiveWebhooks(box);
const live = (stored: VersionedWebhook) => webhooks.of(stored);
const requestViews = new RequestViews(box);

/** Answers once this thread's code is loaded (RenderPool.warm). */
export function ping(): true {
  return true;
}

/** One slice of a fan-out, batch flush or replay plan (plan.ts). */
export function plan(task: PlanTask): PlanSlice {
  return planSlice(task.input, task.progress, { box, live, until: Date.now() + task.sliceMs });
}

/** A preview's bodies under one budget for the request (preview.ts). */
export function preview(task: PreviewTask): PreviewOutcome {
  return renderPreview(task.input, task.budgetMs);
}

/** A test send's body (test-body.ts); the request itself is made by the caller. */
export function testBody(task: TestTask): TestBody {
  return renderTestBody(live(task.webhook), task.event, task.budgetMs);
}

/** A delivery's request as sent, secrets redacted (request-view.ts). */
export function requestView(task: RequestViewTask): RequestView {
  return requestViews.view(task.webhook, task.delivery, task.rotationOverlapSeconds);
}
