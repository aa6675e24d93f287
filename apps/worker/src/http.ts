import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { metricsAuthorised } from '@gatehook/core/metrics-auth';
import { probe } from '@gatehook/core/readiness';

export interface WorkerHttpDeps {
  /** Readiness checks (Postgres, Redis); each must settle quickly. */
  checks: Record<string, () => Promise<unknown>>;
  metrics?: Registry;
  /** METRICS_TOKEN: when set, /metrics needs `Authorization: Bearer <token>`. */
  metricsToken?: string | undefined;
}

/** The worker's operations endpoints: /healthz (alive), /readyz (dependencies reachable), /metrics. */
export function createWorkerServer(deps: WorkerHttpDeps): Server {
  return createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return send(404, { error: { code: 'not_found', message: 'No such route' } });
    if (path === '/healthz') return send(200, { status: 'ok' });
    if (path === '/readyz') {
      void probe(deps.checks).then(({ ok, checks }) =>
        send(ok ? 200 : 503, { status: ok ? 'ok' : 'unavailable', checks }),
      );
      return;
    }
    if (path === '/metrics' && deps.metrics) {
      if (!metricsAuthorised(req.headers.authorization, deps.metricsToken)) {
        return send(401, {
          error: { code: 'unauthorized', message: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' },
        });
      }
      const registry = deps.metrics;
      void registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(text);
        },
        () => send(500, { error: { code: 'internal', message: 'An internal error occurred' } }),
      );
      return;
    }
    send(404, { error: { code: 'not_found', message: 'No such route' } });
  });
}
