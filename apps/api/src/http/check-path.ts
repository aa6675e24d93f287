import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Counter } from 'prom-client';
import { AppError } from '@gatehook/core/errors';
import { checkRequestSchema } from '@gatehook/core/rate-limit-rule-schema';
import type { Decision, RateLimiter } from '@gatehook/ratelimit/limiter';
import { toDecisionView } from '../services/rate-limit-check';
import type { ApiKeyCache } from './api-keys';
import { authenticate, authorize } from './auth';
import { parseBody } from './validation';

/** The largest check body read (CONTRACT 3: 1 MB for every body but ingestion). */
const MAX_BODY_BYTES = 1024 * 1024;
// JSON without a charset or in UTF-8; other charsets take the regular route (body-parser's answer).
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset="?utf-8"?\s*)?$/i;

export interface CheckPathDeps {
  keys: ApiKeyCache;
  limiter: RateLimiter;
  /** gatehook_rate_limit_decisions_total{outcome, source}. */
  decisions: Counter<'outcome' | 'source'>;
}

/**
 * POST /rate-limits/check with nothing on its path but auth, validation, the limiter and the response: mounted
 * before the app's middleware (no per-request log line or duration histogram, no body-parser), the body read and
 * parsed here, the key and the rules from their caches, and the memory store deciding without a promise. Anything
 * unusual (a Content-Encoding, a non-JSON type) goes on to the regular route, whose answers it keeps.
 */
export function checkPath(deps: CheckPathDeps): RequestHandler {
  const access = { kind: 'permission', permission: 'check_rate_limits' } as const;

  const respond = (res: Response, decision: Decision) => {
    deps.decisions.inc({ outcome: decision.allowed ? 'allowed' : 'denied', source: decision.source });
    const body = JSON.stringify(toDecisionView(decision));
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  const decide = (req: Request, res: Response, next: NextFunction, orgId: string, raw: string) => {
    try {
      try {
        req.body = JSON.parse(raw);
      } catch {
        throw new AppError('bad_request', 'The request body is not valid JSON');
      }
      const call = parseBody(checkRequestSchema, req);
      const decision = deps.limiter.decide(orgId, call);
      if (decision instanceof Promise) decision.then((d) => respond(res, d), next);
      else respond(res, decision);
    } catch (error) {
      next(error);
    }
  };

  return (req, res, next) => {
    const encoding = req.headers['content-encoding'];
    if ((encoding && encoding !== 'identity') || !JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      next();
      return;
    }
    let orgId: string;
    try {
      const principal = authenticate(deps.keys, req);
      if (principal instanceof Promise) {
        principal
          .then((p) => {
            authorize(p, access);
            readBody(req, res, next, (raw) => decide(req, res, next, p.orgId, raw));
          })
          .catch(next);
        return;
      }
      authorize(principal, access);
      orgId = principal.orgId;
    } catch (error) {
      next(error);
      return;
    }
    readBody(req, res, next, (raw) => decide(req, res, next, orgId, raw));
  };
}

function readBody(req: Request, _res: Response, next: NextFunction, done: (raw: string) => void): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    req.resume();
    next(new AppError('payload_too_large', 'The request body is too large'));
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
      next(new AppError('payload_too_large', 'The request body is too large'));
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (failed) return;
    if (size === 0) {
      failed = true;
      next(new AppError('bad_request', 'A JSON body is required'));
      return;
    }
    done(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
  });
  req.on('error', () => {
    if (failed) return;
    failed = true;
    next(new AppError('bad_request', 'The request body could not be read'));
  });
}
