import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Code never logs a URL (only its mask), a header or var value, a body or a secret;
 * the redaction list is a second line of defence for fields that could carry one by accident.
 */
export function createLogger(options: { name: string; level: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      base: { service: options.name },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'authorization',
          'headers.authorization',
          'req.headers.authorization',
          'secret',
          '*.secret',
          'key',
          '*.key',
          'url',
          '*.url',
        ],
        censor: '[redacted]',
      },
    },
    options.destination ?? pino.destination(1),
  );
}
