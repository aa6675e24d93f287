/** Stable error codes of the API (CONTRACT section 3), each mapped to its HTTP status in one place. */
export const errorStatus = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  validation_error: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export interface FieldIssue {
  path: string;
  message: string;
}

/** An error whose code, message and details are safe to show to the caller. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: FieldIssue[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message: string, details?: FieldIssue[], headers?: Record<string, string>) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  get status(): number {
    return errorStatus[this.code];
  }
}

/** 422 with one or more field issues. */
export function validationError(details: FieldIssue[], message = 'The request has invalid fields'): AppError {
  return new AppError('validation_error', message, details);
}

/** 404 that reads the same for a missing resource and another organisation's resource. */
export function notFound(what: string): AppError {
  return new AppError('not_found', `${what} not found`);
}

/** The body of an error response (CONTRACT section 3). */
export function errorBody(error: AppError): { error: { code: ErrorCode; message: string; details?: FieldIssue[] } } {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details && error.details.length > 0 ? { details: error.details } : {}),
    },
  };
}
