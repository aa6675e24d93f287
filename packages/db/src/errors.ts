// Error codes meaning "the database cannot be reached right now" (Postgres client, Prisma and the pg adapter).
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EPIPE',
  'EAI_AGAIN',
  'P1001',
  'P1002',
  'P1008',
  'P1017',
  'P2024',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

/** Whether an error means Postgres is unreachable or restarting, so the caller should answer 503, not 500. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    const e = current as {
      code?: unknown;
      errorCode?: unknown;
      cause?: unknown;
      originalCode?: unknown;
      kind?: unknown;
      message?: unknown;
    };
    for (const code of [e.code, e.errorCode, e.originalCode])
      if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
    if (e.kind === 'DatabaseNotReachable' || e.kind === 'ConnectionClosed' || e.kind === 'SocketTimeout') return true;
    if (
      typeof e.message === 'string' &&
      /Connection terminated|connect ECONNREFUSED|terminating connection|the database system is (starting up|shutting down)|Can't reach database server|connection error and is not queryable/i.test(
        e.message,
      )
    )
      return true;
    current = e.cause;
  }
  return false;
}
