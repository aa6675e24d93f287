import { z } from 'zod';
import type { Db } from '@gatehook/db/client';
import { probe } from '@gatehook/core/readiness';
import { defineRoute, type AnyRoute } from '../http/route';

const healthSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.enum(['ok', 'failed'])).optional(),
});

/**
 * /healthz (liveness) and /readyz (Postgres reachable, and Redis ready: `redisReady` is a round trip through every
 * queue the API produces to, CONTRACT 16, not a bare PING).
 */
export function healthRoutes(db: Db, redisReady: () => Promise<unknown>): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'healthz',
      tag: 'operations',
      summary: 'Liveness',
      access: { kind: 'public' },
      responses: { 200: { description: 'The process is alive', schema: healthSchema } },
      async handler() {
        return { status: 200, body: { status: 'ok' } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'readyz',
      tag: 'operations',
      summary: 'Readiness: Postgres reachable, a round trip through every Redis queue',
      access: { kind: 'public' },
      responses: {
        200: { description: 'Ready', schema: healthSchema },
        503: { description: 'A dependency is unreachable', schema: healthSchema },
      },
      async handler() {
        const { ok, checks } = await probe({ postgres: () => db.$queryRaw`SELECT 1`, redis: redisReady });
        return { status: ok ? 200 : 503, body: { status: ok ? 'ok' : 'unavailable', checks } };
      },
    }),
  ];
}
