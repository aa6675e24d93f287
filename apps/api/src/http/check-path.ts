import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, RequestHandler } from 'express';
import type { Counter } from 'prom-client';
import { AppError } from '@gatehook/core/errors';
import type { Logger } from '@gatehook/core/logger';
import { checkRequestSchema } from '@gatehook/core/rate-limit-rule-schema';
import type { Decision, RateLimiter } from '@gatehook/ratelimit/limiter';
import { toDecisionView } from '../services/rate-limit-check';
import type { ApiKeyCache } from './api-keys';
import { authenticate, authorize } from './auth';
import { sendError, toAppError } from './errors';
import { asObject, validateObject } from './validation';

/** The route of the check (CONTRACT 8). */
export const CHECK_ROUTE = '/rate-limits/check';
/** The largest check body read (CONTRACT 3: 1 MB for every body but ingestion). */
const MAX_BODY_BYTES = 1024 * 1024;
// JSON without a charset or in UTF-8; other charsets take the regular route (body-parser's answer).
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset="?utf-8"?\s*)?$/i;
const ACCESS = { kind: 'permission', permission: 'check_rate_limits' } as const;

export interface CheckPathDeps {
  keys: ApiKeyCache;
  limiter: RateLimiter;
  /** gatehook_rate_limit_decisions_total{outcome, source}. */
  decisions: Counter<'outcome' | 'source'>;
}

/** POST /rate-limits/check on a bare request and response, and the same as an Express route. */
export interface CheckPath {
  /**
   * Answers the check, or calls `pass()` (before reading anything) for a request the regular route must answer: a
   * Content-Encoding, a type other than JSON in UTF-8. Errors go to `fail`.
   */
  handle(req: IncomingMessage, res: ServerResponse, pass: () => void, fail: (error: unknown) => void): void;
  /** The Express route: the same, errors to Express's error handler. */
  route: RequestHandler;
}

/**
 * The check with nothing on its path but auth, validation, the limiter and the response: the body read and
 * parsed here, the key and the rules from their caches, the memory store deciding without a promise, the answer
 * written with its length. No request log line, no duration histogram (the decisions counter is the check's
 * metric), no throttling (CONTRACT 14 exempts checks).
 */
export function checkPath(deps: CheckPathDeps): CheckPath {
  const respond = (res: ServerResponse, decision: Decision) => {
    deps.decisions.inc({ outcome: decision.allowed ? 'allowed' : 'denied', source: decision.source });
    const body = JSON.stringify(toDecisionView(decision));
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  const decide = (res: ServerResponse, fail: (error: unknown) => void, orgId: string, raw: string) => {
    try {
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        throw new AppError('bad_request', 'The request body is not valid JSON');
      }
      const call = validateObject(checkRequestSchema, asObject(body));
      const decision = deps.limiter.decide(orgId, call);
      if (decision instanceof Promise) decision.then((d) => respond(res, d), fail);
      else respond(res, decision);
    } catch (error) {
      fail(error);
    }
  };

  const handle: CheckPath['handle'] = (req, res, pass, fail) => {
    const encoding = req.headers['content-encoding'];
    if ((encoding && encoding !== 'identity') || !JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      pass();
      return;
    }
    let orgId: string;
    try {
      const principal = authenticate(deps.keys, req);
      if (principal instanceof Promise) {
        principal
          .then((p) => {
            authorize(p, ACCESS);
            readBody(req, fail, (raw) => decide(res, fail, p.orgId, raw));
          })
          .catch(fail);
        return;
      }
      authorize(principal, ACCESS);
      orgId = principal.orgId;
    } catch (error) {
      fail(error);
      return;
    }
    readBody(req, fail, (raw) => decide(res, fail, orgId, raw));
  };

  return { handle, route: (req, res, next) => handle(req, res, () => next(), next) };
}

/**
 * The API's request listener: POST /rate-limits/check (exactly that URL) answered before Express is entered at
 * all, every other request (a query string or trailing slash on the check included) through the app, where the
 * same check is a route.
 */
export function withCheckPath(check: CheckPath, app: Express, logger: Logger): RequestListener {
  return (req, res) => {
    if (req.method !== 'POST' || req.url !== CHECK_ROUTE) {
      app(req, res);
      return;
    }
    check.handle(req, res, () => app(req, res), (error) => {
      if (res.headersSent) return;
      sendError(res, toAppError(error, logger, 'POST', CHECK_ROUTE));
    });
  };
}

function readBody(req: IncomingMessage, fail: (error: unknown) => void, done: (raw: string) => void): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    req.resume();
    fail(new AppError('payload_too_large', 'The request body is too large'));
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let failed = false;
  req.on('data', (chunk: Buffer) => {
    if (failed) return;
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      failed = true;
      fail(new AppError('payload_too_large', 'The request body is too large'));
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (failed) return;
    if (size === 0) {
      failed = true;
      fail(new AppError('bad_request', 'A JSON body is required'));
      return;
    }
    done(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
  });
  req.on('error', () => {
    if (failed) return;
    failed = true;
    fail(new AppError('bad_request', 'The request body could not be read'));
  });
}
