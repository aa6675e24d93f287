// The console's only way to the API: same origin, the session's key as a Bearer token, errors in the shape of
// CONTRACT section 3 turned into ApiError so every screen can explain them.

const KEY_STORAGE = 'gatehook.apiKey';

/** The API key of this tab (CONTRACT 13: sessionStorage, dropped on sign-out). */
export const session = {
  key: (): string | null => sessionStorage.getItem(KEY_STORAGE),
  signIn: (key: string) => sessionStorage.setItem(KEY_STORAGE, key),
  signOut: () => sessionStorage.removeItem(KEY_STORAGE),
};

export interface FieldIssue {
  path: string;
  message: string;
}

/** An error answer of the API, or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldIssue[] = [],
  ) {
    super(message);
  }
}

/** Calls the API and returns its JSON (undefined for 204). */
export async function api<T = unknown>(method: string, path: string, body?: unknown, key = session.key()): Promise<T> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  } catch {
    throw new ApiError(0, 'network', 'The API could not be reached.');
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string; details?: FieldIssue[] } } | undefined)
      ?.error;
    throw new ApiError(
      response.status,
      error?.code ?? 'unknown',
      error?.message ?? `The API answered ${response.status}.`,
      error?.details ?? [],
    );
  }
  return parsed as T;
}

/** A page of a list route. */
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export function query(params: Record<string, string | number | undefined | null>): string {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '') as [
    string,
    string | number,
  ][];
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`;
}

export type { WebhookView as Webhook, TestResult } from '@gatehook/core/webhook-schema';
export type { RuleView as Rule } from '@gatehook/core/rate-limit-rule-schema';

export interface Attempt {
  at: string;
  status_code: number;
  error: string;
  duration_ms: number;
  response_snippet: string;
}

export interface Delivery {
  id: string;
  webhook_id: string;
  status: 'pending' | 'retrying' | 'succeeded' | 'failed';
  event_count: number;
  attempt_count: number;
  attempts: Attempt[];
  next_retry_at?: string;
  retryable: boolean;
  created_at: string;
  updated_at: string;
  event_ids?: string[];
  error?: string | null;
}

export interface Preset {
  id: string;
  label: string;
  format: 'single' | 'array' | 'ndjson';
  max_events: number;
  template: string;
  vars: string[];
  headers: string[];
  /** OAuth 2.0 the receiver takes; `{tenant}` in token_url is the client's to fill in. */
  auth: { type: 'oauth2_client_credentials'; token_url: string; scope: string; client_auth: 'body' } | null;
}

export interface EventType {
  action: string;
  description: string;
  payload_fields: string[];
}

export interface Notification {
  id: string;
  kind: string;
  webhook_id: string | null;
  message: string;
  created_at: string;
  read_at: string | null;
}

/** CONTRACT 11. */
export interface Task {
  id: string;
  webhook_id: string;
  kind: 'recover' | 'replay';
  status: 'running' | 'succeeded' | 'failed';
  since: string;
  until: string;
  total: number | null;
  processed: number;
  error: string | null;
  created_at: string;
  finished_at: string | null;
}

/** CONTRACT 17: the request of a delivery's last attempt, custom header and variable values redacted. */
export interface SentRequest {
  content_type: string;
  headers: Record<string, string>;
  body: string;
}

/** CONTRACT 17: one hour of a webhook's deliveries (docs/operations.md, "Per-webhook statistics"). */
export interface StatsBucket {
  start: string;
  deliveries: number;
  succeeded: number;
  failed: number;
  attempts: number;
  p50_ms: number | null;
  p99_ms: number | null;
}
