import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, RequestHandler } from 'express';
import type { Principal } from '@gatehook/core/api-keys';
import { AppError } from '@gatehook/core/errors';
import type { Logger } from '@gatehook/core/logger';
import { annotateSpan, traceRequest } from '@gatehook/core/tracing';
import type { Access } from './auth';
import { authenticate, authorize } from './auth';
import type { ApiKeyCache } from './api-keys';
import { sendError, toAppError } from './errors';
import { asObject } from './validation';

// JSON without a charset or in UTF-8; other charsets take the regular route (body-parser's answer).
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset="?utf-8"?\s*)?$/i;

/** What a fast route answers: a status, a JSON body and any headers of its own. */
export interface FastAnswer {
  status: number;
  body: unknown;
  headers?: Readonly<Record<string, string>>;
}

/**
 * A route of the gateway's hot path (the rate limit check, ingestion), served on the bare request and response:
 * auth from the key cache, the body read and parsed here, the answer written with its length. No Express, no
 * body-parser, no request log line; everything else about the route (access, limits, errors) is the same as on
 * the regular route, which still answers what this does not take (see {@link FastHandler.handle}).
 */
export interface FastRoute {
  /** The exact URL (POST only). */
  path: string;
  access: Access;
  /** The largest body read (CONTRACT 3): past it, 413. */
  maxBodyBytes: number;
  /** Answers a JSON object body for an authorised caller; a thrown AppError is the answer's error. */
  answer(principal: Principal, body: Record<string, unknown>): FastAnswer | Promise<FastAnswer>;
  /** Whether the request duration histogram counts it (see {@link withFastPaths}). */
  timed?: boolean;
}

/** A fast route on a bare request and response, and the same as an Express route. */
export interface FastHandler {
  path: string;
  timed: boolean;
  /**
   * Answers the request, or calls `pass()` (before reading anything) for one the regular route must answer: a
   * Content-Encoding, a type other than JSON in UTF-8. Errors go to `fail`.
   */
  handle(req: IncomingMessage, res: ServerResponse, pass: () => void, fail: (error: unknown) => void): void;
  /** The Express route: the same, errors to Express's error handler. */
  route: RequestHandler;
}

/** Builds the handler of a fast route; `keys` resolves bearer keys (synchronously when cached). */
export function fastHandler(keys: ApiKeyCache, def: FastRoute): FastHandler {
  const respond = (res: ServerResponse, answer: FastAnswer) => {
    const body = JSON.stringify(answer.body);
    const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) };
    res.writeHead(answer.status, answer.headers ? { ...answer.headers, ...headers } : headers);
    res.end(body);
  };

  const run = (res: ServerResponse, fail: (error: unknown) => void, principal: Principal, raw: string) => {
    annotateSpan({ 'gatehook.org.id': principal.orgId });
    try {
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        throw new AppError('bad_request', 'The request body is not valid JSON');
      }
      const answer = def.answer(principal, asObject(body));
      if (answer instanceof Promise) answer.then((a) => respond(res, a), fail);
      else respond(res, answer);
    } catch (error) {
      fail(error);
    }
  };

  const handle: FastHandler['handle'] = (req, res, pass, fail) => {
    const encoding = req.headers['content-encoding'];
    if ((encoding && encoding !== 'identity') || !JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      pass();
      return;
    }
    let principal: Principal;
    try {
      const found = authenticate(keys, req);
      if (found instanceof Promise) {
        found
          .then((p) => {
            authorize(p, def.access);
            readBody(req, def.maxBodyBytes, fail, (raw) => run(res, fail, p, raw));
          })
          .catch(fail);
        return;
      }
      principal = found;
      authorize(principal, def.access);
    } catch (error) {
      fail(error);
      return;
    }
    readBody(req, def.maxBodyBytes, fail, (raw) => run(res, fail, principal, raw));
  };

  return {
    path: def.path,
    timed: def.timed ?? false,
    handle,
    route: (req, res, next) => handle(req, res, () => next(), next),
  };
}

/**
 * The API's request listener: a POST to the exact URL of a fast route is answered before Express is entered at
 * all; every other request (a query string or trailing slash on a fast route's URL included) goes through the app,
 * where the same operations are regular routes.
 */
export function withFastPaths(
  handlers: readonly FastHandler[],
  app: Express,
  logger: Logger,
  /** The request duration histogram, for the handlers that are `timed`. */
  observe?: (route: string, status: number, seconds: number) => void,
): RequestListener {
  const byPath = new Map(handlers.map((h) => [h.path, h]));
  return (req, res) => {
    const handler = req.method === 'POST' ? byPath.get(req.url ?? '') : undefined;
    if (!handler) {
      app(req, res);
      return;
    }
    let passed = false;
    if (observe && handler.timed) {
      const started = process.hrtime.bigint();
      res.on('finish', () => {
        if (!passed) observe(handler.path, res.statusCode, Number(process.hrtime.bigint() - started) / 1e9);
      });
    }
    const pass = () => {
      passed = true;
      app(req, res);
    };
    traceRequest(req, res, handler.path, () =>
      handler.handle(req, res, pass, (error) => {
        if (res.headersSent) return;
        sendError(res, toAppError(error, logger, 'POST', handler.path));
      }),
    );
  };
}

function readBody(
  req: IncomingMessage,
  maxBytes: number,
  fail: (error: unknown) => void,
  done: (raw: string) => void,
): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) {
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
    if (size > maxBytes) {
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
