// Envoy's rate limit service (CONTRACT 19) on the API's rate limit check: a RateLimitRequest's descriptors become
// the tool calls of POST /rate-limits/check, each decided by the same check, and the decisions become a
// RateLimitResponse. Mapping and answer are plain functions; the handler adds authentication and the span.

import { status as GrpcStatus, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { AppError, type FieldIssue } from '@gatehook/core/errors';
import type { Logger } from '@gatehook/core/logger';
import { checkRequestSchema } from '@gatehook/core/rate-limit-rule-schema';
import { annotateSpan, traceRpc } from '@gatehook/core/tracing';
import type { Decision } from '@gatehook/ratelimit/limiter';
import type { ToolCall } from '@gatehook/ratelimit/scope';
import type { ApiKeyCache } from '../http/api-keys';
import { authenticateBearer, authorize } from '../http/auth';
import { validateObject } from '../http/validation';
import { rateLimitFields, secondsUntil, tightestRule, type RateLimitCheck } from '../services/rate-limit-check';

/** The service and method Envoy calls. */
export const RLS_SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';
export const RLS_METHOD = 'ShouldRateLimit';
/** The only domain served: the scope type of the rules. */
export const RLS_DOMAIN = 'mcp_tool_call';
/** Most descriptors one request may carry: each is one check. */
export const MAX_DESCRIPTORS = 100;
/** The cost of a call, as in the HTTP check. */
const MIN_COST = 1;
const MAX_COST = 1000;

/** What a request that is not a RateLimitRequest decodes to (see server.ts). */
export const UNDECODABLE: unique symbol = Symbol('undecodable request');

/** RateLimitRequest as decoded (proto field names; absent fields undefined; 64-bit integers as numbers). */
export interface RateLimitRequest {
  domain?: string;
  descriptors?: { entries?: { key?: string; value?: string }[]; hits_addend?: { value?: number } | null }[];
  hits_addend?: number;
}

type Code = 'OK' | 'OVER_LIMIT';
type Unit = 'UNKNOWN' | 'SECOND' | 'MINUTE' | 'HOUR';

/** RateLimitResponse as encoded. */
export interface RateLimitResponse {
  overall_code: Code;
  statuses: {
    code: Code;
    current_limit?: { name: string; requests_per_unit: number; unit: Unit };
    limit_remaining?: number;
    duration_until_reset?: { seconds: number; nanos: number };
  }[];
  response_headers_to_add: { key: string; value: string }[];
}

/** A status of the call's own making: its code and a message that is safe to show. */
export class RpcError extends Error {
  constructor(
    readonly code: GrpcStatus,
    message: string,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

// Entry keys: the check's attributes, single-valued ones by their own name, each list by its singular.
const SINGLE_KEYS = new Set(['tool_key', 'user_id', 'agent_slug', 'agent_instance_id', 'mcp_id']);
const LIST_KEYS: Readonly<Record<string, string>> = {
  group: 'groups',
  agent_slug_tag_id: 'agent_slug_tag_ids',
  mcp_tag_id: 'mcp_tag_ids',
  tool_tag_id: 'tool_tag_ids',
};
const ENTRY_OF_FIELD: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(LIST_KEYS).map(([entry, field]) => [field, entry]),
);
const KNOWN_KEYS = [...SINGLE_KEYS, ...Object.keys(LIST_KEYS)].join(', ');

const invalid = (message: string) => new RpcError(GrpcStatus.INVALID_ARGUMENT, message);

/** A key as an error message may quote it: short and printable. */
function quoted(key: string): string {
  return JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key);
}

/** An HTTP check's field issue in the words of the descriptor: `groups.2` is the third `group` entry. */
function entryIssue(index: number, issue: FieldIssue): string {
  const [field, position] = issue.path.split('.');
  const name =
    field === 'cost'
      ? 'hits_addend'
      : field && ENTRY_OF_FIELD[field]
        ? `${ENTRY_OF_FIELD[field]} value ${Number(position) + 1}`
        : (field ?? 'entries');
  return `descriptors[${index}]: ${name}: ${issue.message}`;
}

/**
 * The cost of descriptor `index` (CONTRACT 19): its hits_addend when set (0 counts as 1), else the request's when not
 * 0, else 1.
 */
function costOf(request: RateLimitRequest, index: number): number {
  const own = request.descriptors![index]!.hits_addend;
  const cost = own ? own.value || 1 : request.hits_addend || 1;
  if (!Number.isInteger(cost) || cost < MIN_COST || cost > MAX_COST) {
    throw invalid(`descriptors[${index}]: hits_addend must be ${MIN_COST} to ${MAX_COST} (is ${cost})`);
  }
  return cost;
}

/**
 * The tool calls of a request's descriptors, in order, every one validated before any is checked (CONTRACT 19).
 * Throws an INVALID_ARGUMENT {@link RpcError} naming the first problem.
 */
export function toolCallsOf(request: RateLimitRequest | typeof UNDECODABLE): ToolCall[] {
  if (request === UNDECODABLE) throw invalid('the request is not a RateLimitRequest (it does not decode)');
  if (request.domain !== RLS_DOMAIN) throw invalid(`domain must be ${RLS_DOMAIN}`);
  const descriptors = request.descriptors ?? [];
  if (descriptors.length === 0) throw invalid('at least one descriptor is required');
  if (descriptors.length > MAX_DESCRIPTORS)
    throw invalid(`at most ${MAX_DESCRIPTORS} descriptors per request (got ${descriptors.length})`);
  const calls: ToolCall[] = new Array(descriptors.length);
  for (let d = 0; d < descriptors.length; d += 1) {
    const body: Record<string, unknown> = { cost: costOf(request, d) };
    const entries = descriptors[d]!.entries ?? [];
    for (let e = 0; e < entries.length; e += 1) {
      const key = entries[e]!.key ?? '';
      const value = entries[e]!.value ?? '';
      const list = LIST_KEYS[key];
      if (list !== undefined) {
        ((body[list] ??= []) as string[]).push(value);
      } else if (SINGLE_KEYS.has(key)) {
        if (key in body) throw invalid(`descriptors[${d}].entries[${e}]: ${key} is given twice (it takes one value)`);
        body[key] = value;
      } else {
        throw invalid(`descriptors[${d}].entries[${e}]: unknown key ${quoted(key)} (known: ${KNOWN_KEYS})`);
      }
    }
    if (!('tool_key' in body)) throw invalid(`descriptors[${d}]: tool_key is required`);
    try {
      calls[d] = validateObject(checkRequestSchema, body);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      const issue = error.details?.[0];
      throw invalid(issue ? entryIssue(d, issue) : `descriptors[${d}]: ${error.message}`);
    }
  }
  return calls;
}

/** The unit of a window T when it is exactly one (CONTRACT 19). */
function unitOf(windowMs: number): Unit {
  return windowMs === 1_000 ? 'SECOND' : windowMs === 60_000 ? 'MINUTE' : windowMs === 3_600_000 ? 'HOUR' : 'UNKNOWN';
}

/** How long a denied call waits before it may pass (ms): the limiter's retry time, else its denying rule's reset. */
function waitOf(decision: Decision): number {
  if (decision.retryAfterMs !== null) return decision.retryAfterMs;
  const denying = decision.rules.find((outcome) => outcome.rule.id === decision.deniedBy);
  return denying ? Math.max(0, denying.resetAt - decision.now) : 0;
}

/** The RateLimitResponse of the descriptors' decisions, in order (CONTRACT 19). */
export function responseOf(decisions: readonly Decision[]): RateLimitResponse {
  let denied = false;
  let longestWait = 0;
  const statuses: RateLimitResponse['statuses'] = new Array(decisions.length);
  for (let i = 0; i < decisions.length; i += 1) {
    const decision = decisions[i]!;
    const code: Code = decision.allowed ? 'OK' : 'OVER_LIMIT';
    if (!decision.allowed) {
      denied = true;
      longestWait = Math.max(longestWait, waitOf(decision));
    }
    const tightest = tightestRule(decision);
    if (tightest === null) {
      statuses[i] = { code };
      continue;
    }
    const untilReset = Math.max(0, tightest.resetAt - decision.now);
    statuses[i] = {
      code,
      current_limit: { name: tightest.rule.id, requests_per_unit: tightest.limit, unit: unitOf(tightest.windowMs) },
      limit_remaining: tightest.remaining,
      duration_until_reset: { seconds: Math.floor(untilReset / 1000), nanos: (untilReset % 1000) * 1_000_000 },
    };
  }
  const headers: RateLimitResponse['response_headers_to_add'] = [];
  const fields = decisions[0] ? rateLimitFields(decisions[0]) : null;
  if (fields) {
    headers.push(
      { key: 'RateLimit-Policy', value: fields['RateLimit-Policy'] },
      { key: 'RateLimit', value: fields.RateLimit },
    );
  }
  if (denied) headers.push({ key: 'retry-after', value: String(secondsUntil(longestWait, 0)) });
  return { overall_code: denied ? 'OVER_LIMIT' : 'OK', statuses, response_headers_to_add: headers };
}

/** An error of the call as the status it ends with; anything unexpected is INTERNAL and logged, never shown. */
function statusOf(error: unknown, logger: Logger): RpcError {
  if (error instanceof RpcError) return error;
  if (error instanceof AppError) {
    if (error.code === 'unauthorized') return new RpcError(GrpcStatus.UNAUTHENTICATED, error.message);
    if (error.code === 'forbidden') return new RpcError(GrpcStatus.PERMISSION_DENIED, error.message);
    if (error.code === 'unavailable') return new RpcError(GrpcStatus.UNAVAILABLE, error.message);
  }
  logger.error(
    {
      err: error instanceof Error ? error.message : String(error),
      stack: error instanceof Error ? error.stack : undefined,
    },
    'ShouldRateLimit failed',
  );
  return new RpcError(GrpcStatus.INTERNAL, 'internal error');
}

/** Decides the calls one after another, without a promise while the check needs none (the memory store). */
function decideAll(check: RateLimitCheck, orgId: string, calls: readonly ToolCall[]): Decision[] | Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (let i = 0; i < calls.length; i += 1) {
    const decision = check(orgId, calls[i]!, 'grpc');
    if (decision instanceof Promise) {
      return (async () => {
        decisions.push(await decision);
        for (let j = i + 1; j < calls.length; j += 1) decisions.push(await check(orgId, calls[j]!, 'grpc'));
        return decisions;
      })();
    }
    decisions.push(decision);
  }
  return decisions;
}

export interface RateLimitServiceDeps {
  keys: Pick<ApiKeyCache, 'principalOf'>;
  check: RateLimitCheck;
  logger: Logger;
  /** Default true: each call runs in a server span. The boot-time warm-up (./warm-up.ts) makes none. */
  traced?: boolean;
}

// The handler's body without a span: `end` is not needed.
const untraced = (
  _carrier: unknown,
  _service: string,
  _method: string,
  handle: (end: (code: number) => void) => void,
) => handle(() => undefined);

/** The metadata value of a single-valued text key, as an HTTP header would carry it. */
function metadataText(call: ServerUnaryCall<unknown, unknown>, key: string): string | undefined {
  const value = call.metadata.get(key)[0];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The ShouldRateLimit handler: the API key of the `authorization` metadata (as the HTTP API reads it, needing
 * check_rate_limits), the descriptors validated, then checked in order, in a server span per call.
 */
export function shouldRateLimitHandler(deps: RateLimitServiceDeps) {
  const traced = deps.traced === false ? untraced : traceRpc;
  return (
    call: ServerUnaryCall<RateLimitRequest | typeof UNDECODABLE, RateLimitResponse>,
    callback: sendUnaryData<RateLimitResponse>,
  ): void => {
    const trace = { traceparent: metadataText(call, 'traceparent'), tracestate: metadataText(call, 'tracestate') };
    traced(trace, RLS_SERVICE, RLS_METHOD, (end) => {
      const fail = (error: unknown) => {
        const failure = statusOf(error, deps.logger);
        end(failure.code);
        callback({ code: failure.code, details: failure.message });
      };
      const answer = (decisions: Decision[]) => {
        end(GrpcStatus.OK);
        callback(null, responseOf(decisions));
      };
      const decide = (orgId: string) => {
        annotateSpan({ 'gatehook.org.id': orgId });
        const decisions = decideAll(deps.check, orgId, toolCallsOf(call.request));
        if (decisions instanceof Promise) decisions.then(answer, fail);
        else answer(decisions);
      };
      try {
        const principal = authenticateBearer(deps.keys, metadataText(call, 'authorization'));
        if (principal instanceof Promise) {
          principal
            .then((found) => {
              authorize(found, { kind: 'permission', permission: 'check_rate_limits' });
              decide(found.orgId);
            })
            .catch(fail);
          return;
        }
        authorize(principal, { kind: 'permission', permission: 'check_rate_limits' });
        decide(principal.orgId);
      } catch (error) {
        fail(error);
      }
    });
  };
}
