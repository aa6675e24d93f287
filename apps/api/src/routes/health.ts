import { z } from 'zod';
import type { Db } from '@gatehook/db/client';
import type { Redis } from 'ioredis';
import { probe } from '@gatehook/core/readiness';
import { defineRoute, type AnyRoute } from '../http/route';

const healthSchema = z.object({ status: z.enum(['ok', 'unavailable']), checks: z.record(z.string(), z.enum(['ok', 'failed'])).optional() });

/** /healthz (liveness) and /readyz (Postgres and Redis reachable). */
export function healthRoutes(db: Db, redis: Redis): AnyRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/healthz', operationId: 'healthz', tag: 'operations',
      summary: 'Liveness', access: { kind: 'public' },
      responses: { 200: { description: 'The process is alive', schema: healthSchema } },
      async handler() {
        return { status: 200, body: { status: 'ok' } };
      },
    }),
    defineRoute({
      method: 'get', path: '/readyz', operationId: 'readyz', tag: 'operations',
      summary: 'Readiness: Postgres and Redis reachable', access: { kind: 'public' },
      responses: { 200: { description: 'Ready', schema: healthSchema }, 503: { description: 'A dependency is unreachable', schema: healthSchema } },
      async handler() {
        const { ok, checks } = await probe({ postgres: () => db.$queryRaw`SELECT 1`, redis: () => redis.ping() });
        return { status: ok ? 200 : 503, body: { status: ok ? 'ok' : 'unavailable', checks } };
      },
    }),
  ];
}
