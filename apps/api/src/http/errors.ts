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

/** The one error handler: every error leaves as CONTRACT section 3's shape; a 5xx never carries details. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    let appError = error instanceof AppError ? error : fromParserError(error as { type?: string });
    if (!appError && isDatabaseUnavailable(error)) {
      logger.warn({ method: req.method, path: req.route?.path ?? 'unmatched' }, 'database unavailable');
      appError = new AppError('unavailable', 'The service is temporarily unavailable; retry later', undefined, { 'retry-after': '5' });
    }
    if (!appError) {
      logger.error({ err: error, method: req.method, path: req.route?.path ?? 'unmatched' }, 'unhandled error');
      appError = new AppError('internal', 'An internal error occurred');
    }
    if (appError.headers) res.set(appError.headers);
    res.status(appError.status).json(errorBody(appError));
  };
}

/** 404 for every path no route matched. */
export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new AppError('not_found', 'No such route'));
};
