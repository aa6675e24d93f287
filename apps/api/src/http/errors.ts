import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, errorBody } from '@gatehook/core/errors';
import type { Logger } from '@gatehook/core/logger';
import { isDatabaseUnavailable } from '@gatehook/db/errors';

// Errors raised by body-parser carry a `type`; map them to the contract's codes.
function fromParserError(error: { type?: string; status?: number }): AppError | null {
  switch (error.type) {
    case 'entity.parse.failed':
      return new AppError('bad_request', 'The request body is not valid JSON');
    case 'entity.too.large':
      return new AppError('payload_too_large', 'The request body is too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('bad_request', 'The request body encoding is not supported');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new AppError('bad_request', 'The request body could not be read');
    default:
      return null;
  }
}

// Other errors of Express's own machinery carry an HTTP status (http-errors): a body that does not decode with
// its Content-Encoding, a path whose percent-encoding is malformed (a URIError: no resource has that id).
function fromHttpError(error: { status?: unknown; statusCode?: unknown }): AppError | null {
  const status = typeof error.status === 'number' ? error.status : error.statusCode;
  if (typeof status !== 'number' || status < 400 || status > 499) return null;
  if (error instanceof URIError) return new AppError('not_found', 'No resource at that path');
  if (status === 413) return new AppError('payload_too_large', 'The request body is too large');
  return new AppError('bad_request', 'The request could not be read');
}

/**
 * Any error as the AppError the client gets: ours as they are, Express's own mapped, an unreachable database a 503
 * with Retry-After, anything else a 500 without details (logged, with the route template, never the URL).
 */
export function toAppError(error: unknown, logger: Logger, method: string, path: string): AppError {
  let appError =
    error instanceof AppError
      ? error
      : (fromParserError(error as { type?: string }) ?? fromHttpError((error ?? {}) as { status?: unknown }));
  if (!appError && isDatabaseUnavailable(error)) {
    logger.warn({ method, path }, 'database unavailable');
    appError = new AppError('unavailable', 'The service is temporarily unavailable; retry later', undefined, {
      'retry-after': '5',
    });
  }
  if (!appError) {
    logger.error({ err: error, method, path }, 'unhandled error');
    appError = new AppError('internal', 'An internal error occurred');
  }
  return appError;
}

/** Writes an error as CONTRACT section 3's shape on a bare response (the check path, outside Express). */
export function sendError(res: ServerResponse, appError: AppError): void {
  const body = JSON.stringify(errorBody(appError));
  res.writeHead(appError.status, {
    ...appError.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** The one error handler: every error leaves as CONTRACT section 3's shape; a 5xx never carries details. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const appError = toAppError(error, logger, req.method, req.route?.path ?? 'unmatched');
    if (appError.headers) res.set(appError.headers);
    res.status(appError.status).json(errorBody(appError));
  };
}

/** 404 for every path no route matched. */
export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new AppError('not_found', 'No such route'));
};
