import type { NextFunction, Request, Response, Router } from 'express';
import type { z } from 'zod';
import type { Principal } from '@gatehook/core/api-keys';
import { AppError } from '@gatehook/core/errors';
import type { ApiKeyCache } from './api-keys';
import { authenticate, authorize, type Access } from './auth';
import { UNTHROTTLED_ROUTES, type ManagementThrottle } from './throttle';
import { parseBody, parseParams, parseQuery } from './validation';

export interface RouteResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface RouteContext<P, Q, B> {
  req: Request;
  res: Response;
  principal: Principal;
  params: P;
  query: Q;
  body: B;
}

type Out<T> = T extends z.ZodType ? z.output<T> : undefined;

/**
 * One route: its path, access rule and zod schemas. The same definition validates requests, authorises the
 * caller and generates /openapi.json, so the documentation cannot drift from what is enforced.
 */
export interface RouteDef<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI-style path, e.g. `/webhooks/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  access: Access;
  params?: P;
  query?: Q;
  body?: B;
  /** What /openapi.json shows for the body when it differs from the validating schema (validated in the handler). */
  bodyDoc?: z.ZodType;
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  handler(ctx: RouteContext<Out<P>, Out<Q>, Out<B>>): Promise<RouteResult>;
}

// Erases the generic parameters so routes of different shapes share one list.
export type AnyRoute = RouteDef<z.ZodType | undefined, z.ZodType | undefined, z.ZodType | undefined>;

/** Declares a route with its types inferred from its schemas. */
export function defineRoute<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(def: RouteDef<P, Q, B>): AnyRoute {
  return def as unknown as AnyRoute;
}

/**
 * Mounts routes on an Express router: auth, management throttling (CONTRACT 14; null when turned off), then params,
 * query and body validation, then the handler.
 */
export function mountRoutes(
  router: Router,
  keys: ApiKeyCache,
  throttle: ManagementThrottle | null,
  routes: readonly AnyRoute[],
): void {
  for (const route of routes) {
    const expressPath = route.path.replace(/\{(\w+)\}/g, ':$1');
    const throttled =
      throttle && route.access.kind !== 'public' && !UNTHROTTLED_ROUTES.has(`${route.method} ${route.path}`)
        ? throttle
        : null;
    router[route.method](expressPath, async (req: Request, res: Response, next: NextFunction) => {
      try {
        let principal = null as unknown as Principal;
        if (route.access.kind !== 'public') {
          principal = await authenticate(keys, req);
          // Before authorisation: requests a key may not make count against it too.
          if (throttled) await throttled.admit(principal);
          authorize(principal, route.access);
        }
        const params = route.params ? parseParams(route.params, req.params) : undefined;
        const query = route.query ? parseQuery(route.query, req.query) : undefined;
        const body = route.body ? parseBody(route.body, req) : undefined;
        const result = await route.handler({ req, res, principal, params, query, body });
        if (result.headers) res.set(result.headers);
        if (result.body === undefined) res.status(result.status).end();
        else res.status(result.status).json(result.body);
      } catch (error) {
        next(error instanceof Error ? error : new AppError('internal', 'An internal error occurred'));
      }
    });
  }
}
